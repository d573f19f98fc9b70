//! Bad input gets a 4xx with the JSON error body, and the log is unchanged.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_error, spawn_app, TestApp};

async fn raw_post(
    app: &TestApp,
    path: &str,
    token: &str,
    content_type: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    app.client
        .post(format!("{}{}", app.address, path))
        .bearer_auth(token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn bad_bodies_are_refused_and_nothing_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("limits.toml");
    std::fs::write(
        &config,
        "[limits]\nmax_body_bytes = 4096\nmax_messages_per_request = 3\nmax_content_chars = 200\n",
    )
    .unwrap();
    let app = crate::helpers::spawn_app_with(&[("MNEMO_CONFIG", config.to_str().unwrap())]).await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u",
        json!([{"role": "user", "content": "already accepted", "id": "keep"}]),
    )
    .await;
    let before = app.all_events("acme").await;

    let path = "/v1/subjects/u/messages";
    let json_type = "application/json";
    assert_error(
        raw_post(&app, path, &token, json_type, b"{\"messages\": [".to_vec()).await,
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        raw_post(&app, path, &token, json_type, vec![b' '; 10_000]).await,
        413,
        "payload_too_large",
    )
    .await;
    assert_error(
        raw_post(&app, path, &token, "text/plain", b"{}".to_vec()).await,
        415,
        "unsupported_media_type",
    )
    .await;
    let cases = [
        (
            json!({"messages": [{"role": "user", "content": "x", "colour": "red"}]}),
            400,
            "invalid_body",
        ),
        (
            json!({"messages": [{"role": "user", "content": 42}]}),
            400,
            "invalid_body",
        ),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            400,
            "invalid_body",
        ),
        (
            json!({"messages": [{"role": "user", "content": "x", "timestamp": "yesterday"}]}),
            400,
            "invalid_body",
        ),
        (json!({"messages": []}), 422, "empty_batch"),
        (
            json!({"messages": [{"role": "user", "content": "   "}]}),
            422,
            "invalid_content",
        ),
        (
            json!({"messages": [{"role": "user", "content": "x".repeat(201)}]}),
            422,
            "content_too_long",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "user", "content": "c"}, {"role": "user", "content": "d"}]}),
            422,
            "batch_too_large",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a", "id": "x"}, {"role": "user", "content": "b", "id": "x"}]}),
            422,
            "duplicate_message_id",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a", "session": "bad session!"}]}),
            400,
            "invalid_id",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a"}], "extra": true}),
            400,
            "invalid_body",
        ),
    ];
    for (body, status, code) in cases {
        let response = app
            .call(Method::POST, path, &token, Some(body.clone()))
            .await;
        assert_error(response, status, code).await;
    }
    // A batch with one bad message appends none of the good ones.
    let partly_bad =
        json!({"messages": [{"role": "user", "content": "fine"}, {"role": "user", "content": ""}]});
    assert_error(
        app.call(Method::POST, path, &token, Some(partly_bad)).await,
        422,
        "invalid_content",
    )
    .await;

    assert_error(
        app.post_messages(
            &token,
            "bad%20subject",
            json!([{"role": "user", "content": "x"}]),
        )
        .await,
        400,
        "invalid_id",
    )
    .await;
    assert_error(
        app.post_messages(
            &token,
            "alice@example.com",
            json!([{"role": "user", "content": "x"}]),
        )
        .await,
        400,
        "invalid_id",
    )
    .await;

    let memory_cases = [
        (
            json!({"content": "x", "kind": "opinion"}),
            400,
            "invalid_body",
        ),
        (
            json!({"content": "x", "kind": "fact", "confidence": 1.5}),
            422,
            "out_of_range",
        ),
        (
            json!({"content": "x", "kind": "fact", "tags": ["a@b.com"]}),
            422,
            "invalid_tag",
        ),
        (
            json!({"content": "x", "kind": "fact", "tags": ["call 4155550132 now"]}),
            422,
            "tag_contains_pii",
        ),
        (json!({"kind": "fact"}), 400, "invalid_body"),
    ];
    for (body, status, code) in memory_cases {
        assert_error(app.create_memory(&token, "u", body).await, status, code).await;
    }
    assert_error(
        app.get("/v1/memories/not-a-uuid", &token).await,
        400,
        "invalid_id",
    )
    .await;
    assert_error(
        app.get("/v1/subjects/u/memories?limit=0", &token).await,
        400,
        "invalid_limit",
    )
    .await;
    assert_error(
        app.get("/v1/subjects/u/memories?kind=opinion", &token)
            .await,
        400,
        "invalid_kind",
    )
    .await;
    assert_error(
        app.get("/v1/subjects/u/memories?limit=abc", &token).await,
        400,
        "invalid_query",
    )
    .await;
    assert_error(
        app.get("/v1/audit?from=yesterday", &token).await,
        400,
        "invalid_query",
    )
    .await;

    let after = app.all_events("acme").await;
    assert_eq!(after, before, "the log is unchanged");
}

#[tokio::test]
async fn bad_corrections_change_nothing() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let id = app.memory(&token, "u", "Lives in Lyon").await;
    let path = format!("/v1/memories/{id}");
    for (body, status, code) in [
        (json!({}), 422, "nothing_to_change"),
        (json!({"reason": "only a reason"}), 422, "nothing_to_change"),
        (json!({"content": ""}), 422, "invalid_content"),
        (json!({"importance": -1}), 422, "out_of_range"),
        (json!({"state": "archived"}), 400, "invalid_body"),
    ] {
        assert_error(
            app.call(Method::PATCH, &path, &token, Some(body)).await,
            status,
            code,
        )
        .await;
    }
    let bad_if_match = app
        .client
        .patch(format!("{}{}", app.address, path))
        .bearer_auth(&token)
        .header("If-Match", "W/\"abc\"")
        .json(&json!({"content": "x"}))
        .send()
        .await
        .unwrap();
    assert_error(bad_if_match, 400, "invalid_if_match").await;
    let delete_bad_body = app
        .client
        .delete(format!("{}{}", app.address, path))
        .bearer_auth(&token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_error(delete_bad_body, 400, "invalid_json").await;
    let read = app.get_json(&path, &token).await;
    assert_eq!(read["version"], 1);
    assert_eq!(read["content"], "Lives in Lyon");
}

#[tokio::test]
async fn unknown_routes_and_methods_get_json_errors() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    assert_error(
        app.get("/v1/nothing-here", &token).await,
        404,
        "route_not_found",
    )
    .await;
    assert_error(
        app.call(Method::PUT, "/v1/audit", &token, None).await,
        405,
        "method_not_allowed",
    )
    .await;
}
