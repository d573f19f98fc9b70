//! The OpenAPI document describes every route the server serves, and every
//! documented route exists.

use std::collections::BTreeSet;

use crate::helpers::spawn_app;

#[tokio::test]
async fn every_route_is_documented_and_every_documented_route_is_served() {
    let app = spawn_app().await;
    let doc: serde_json::Value = app
        .client
        .get(format!("{}/openapi.json", app.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if method != "parameters" {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    let served: BTreeSet<(String, String)> = mnemo_app::application::routes()
        .into_iter()
        .map(|(m, p)| (m.to_owned(), p.to_owned()))
        .collect();
    assert_eq!(documented, served);

    // Each route is really routed: no fallback 404/405 for its method.
    for (method, path) in &served {
        let concrete = path
            .replace("{subject}", "s1")
            .replace("{id}", "0190a5b6-1d1b-7c3e-9a61-3b4f1f0c2d11");
        let response = app
            .client
            .request(
                method.parse().unwrap(),
                format!("{}{}", app.address, concrete),
            )
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        let code = body["error"]["code"].as_str().unwrap_or_default();
        assert!(
            code != "route_not_found" && code != "method_not_allowed",
            "{method} {path} is not routed ({status} {code})"
        );
    }

    let page = app
        .client
        .get(format!("{}/docs", app.address))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (_, path) in &served {
        assert!(page.contains(path.as_str()), "{path} missing from /docs");
    }
}

#[tokio::test]
async fn health_and_metrics() {
    let app = spawn_app().await;
    let health = app
        .client
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let ready = app
        .client
        .get(format!("{}/readyz", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u",
        serde_json::json!([{"role": "user", "content": "mail a@b.co"}]),
    )
    .await;
    let metrics = app
        .client
        .get(format!("{}/metrics", app.address))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("mnemo_http_requests_total"), "{metrics}");
    assert!(
        metrics.contains("route=\"/v1/subjects/{subject}/messages\""),
        "route pattern, not raw path"
    );
    assert!(
        !metrics.contains("/v1/subjects/u/"),
        "no raw paths in labels"
    );
    assert!(metrics.contains("mnemo_events_appended_total{event_type=\"MessageReceived\"} 1"));
    assert!(metrics.contains("mnemo_pii_findings_total{kind=\"email\"} 1"));
    assert!(metrics.contains("mnemo_relay_lag_events"));
}

#[tokio::test]
async fn what_an_erasure_makes_gone_is_documented_as_410_subject_erased() {
    let app = spawn_app().await;
    let doc: serde_json::Value = app
        .client
        .get(format!("{}/openapi.json", app.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["components"]["responses"]["Gone"].is_object());
    for (method, path) in [
        ("get", "/v1/memories/{id}"),
        ("patch", "/v1/memories/{id}"),
        ("delete", "/v1/memories/{id}"),
        ("post", "/v1/review/{id}"),
        ("post", "/v1/subjects/{subject}/consolidate"),
    ] {
        let gone = &doc["paths"][path][method]["responses"]["410"];
        assert_eq!(
            gone["$ref"], "#/components/responses/Gone",
            "{method} {path}"
        );
        assert!(
            gone["description"]
                .as_str()
                .is_some_and(|d| d.contains("`subject_erased`")),
            "{method} {path}"
        );
    }
    // A memory's sources from before an erasure are unknown, not gone: their
    // ids were keyed under the destroyed key.
    let create = &doc["paths"]["/v1/subjects/{subject}/memories"]["post"];
    assert!(create["responses"]["410"].is_null());
    assert!(create["description"]
        .as_str()
        .is_some_and(|d| d.contains("422 `unknown_source`")));
    let states = &doc["components"]["schemas"]["Memory"]["properties"]["state"]["enum"];
    assert!(states.as_array().unwrap().iter().any(|s| s == "erased"));
}
