//! Tenant A's token never reads, changes, exports or erases tenant B's data,
//! even with B's ids; a subject-bound token cannot touch another subject.

use mnemo_auth::Scope;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

#[tokio::test]
async fn another_tenant_cannot_see_or_touch_anything_even_with_the_ids() {
    let app = spawn_app().await;
    let a = app.admin("tenant-a");
    let b = app.admin("tenant-b");
    app.post_messages(
        &a,
        "shared",
        json!([{"role": "user", "content": "A's secret plan"}]),
    )
    .await;
    let id = app.memory(&a, "shared", "A's memory").await;
    app.wait_for_list(&a, "shared", |m| m.len() == 1).await;

    assert_error(
        app.get(&format!("/v1/memories/{id}"), &b).await,
        404,
        "memory_not_found",
    )
    .await;
    assert_error(
        app.get(&format!("/v1/memories/{id}/history"), &b).await,
        404,
        "memory_not_found",
    )
    .await;
    let patch = app
        .call(
            Method::PATCH,
            &format!("/v1/memories/{id}"),
            &b,
            Some(json!({"content": "hijacked"})),
        )
        .await;
    assert_error(patch, 404, "memory_not_found").await;
    let delete = app
        .call(Method::DELETE, &format!("/v1/memories/{id}"), &b, None)
        .await;
    assert_error(delete, 404, "memory_not_found").await;

    let list = app.get_json("/v1/subjects/shared/memories", &b).await;
    assert!(list["memories"].as_array().unwrap().is_empty());
    let export = app.get_json("/v1/subjects/shared/export", &b).await;
    assert!(export["messages"].as_array().unwrap().is_empty());
    assert!(export["memories"].as_array().unwrap().is_empty());
    let audit = app.get_json("/v1/audit", &b).await;
    assert!(audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["type"] == "ExportGenerated"));

    // B erasing "its" subject of the same name leaves A's untouched.
    app.erase(&b, "shared").await;
    let read = app.get_json(&format!("/v1/memories/{id}"), &a).await;
    assert_eq!(read["content"], "A's memory");
    let export_a = app.get_json("/v1/subjects/shared/export", &a).await;
    assert_eq!(export_a["messages"][0]["content"], "A's secret plan");

    // And A's erasure receipt is invisible to B.
    let response = app
        .call(Method::DELETE, "/v1/subjects/shared", &a, None)
        .await;
    let erasure: Value = response.json().await.unwrap();
    let receipt = format!("/v1/erasures/{}", erasure["erasure_id"].as_str().unwrap());
    assert_error(app.get(&receipt, &b).await, 404, "erasure_not_found").await;
}

#[tokio::test]
async fn a_subject_bound_token_cannot_touch_another_subject() {
    let app = spawn_app().await;
    let admin = app.admin("acme");
    let other_memory = app.memory(&admin, "bob", "Bob's memory").await;
    let alice = app.token("acme", &Scope::ALL, Some("alice"));

    let own = app
        .post_messages(
            &alice,
            "alice",
            json!([{"role": "user", "content": "hello from alice"}]),
        )
        .await;
    assert_eq!(own.status(), 202);

    let forbidden = [
        app.post_messages(&alice, "bob", json!([{"role": "user", "content": "hi"}]))
            .await,
        app.create_memory(&alice, "bob", json!({"content": "x", "kind": "fact"}))
            .await,
        app.get(&format!("/v1/memories/{other_memory}"), &alice)
            .await,
        app.get(&format!("/v1/memories/{other_memory}/history"), &alice)
            .await,
        app.call(
            Method::PATCH,
            &format!("/v1/memories/{other_memory}"),
            &alice,
            Some(json!({"content": "x"})),
        )
        .await,
        app.call(
            Method::DELETE,
            &format!("/v1/memories/{other_memory}"),
            &alice,
            None,
        )
        .await,
        app.get("/v1/subjects/bob/memories", &alice).await,
        app.get("/v1/subjects/bob/export", &alice).await,
        app.call(Method::DELETE, "/v1/subjects/bob", &alice, None)
            .await,
        app.get("/v1/audit?subject=bob", &alice).await,
    ];
    for response in forbidden {
        assert_error(response, 403, "subject_forbidden").await;
    }
    // Unfiltered audit is narrowed to the bound subject.
    let audit = app.get_json("/v1/audit", &alice).await;
    let events = audit["events"].as_array().unwrap();
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| e["subject"] == "alice"));
    // Bob's memory is unchanged.
    assert_eq!(
        app.get_json(&format!("/v1/memories/{other_memory}"), &admin)
            .await["version"],
        1
    );
}

#[tokio::test]
async fn each_endpoint_requires_its_scope() {
    let app = spawn_app().await;
    let admin = app.admin("acme");
    let id = app.memory(&admin, "u", "something").await;
    let read_only = app.token("acme", &[Scope::MemoriesRead], None);
    let write_only = app.token("acme", &[Scope::MemoriesWrite], None);
    let cases = [
        app.post_messages(&read_only, "u", json!([{"role": "user", "content": "hi"}]))
            .await,
        app.create_memory(&read_only, "u", json!({"content": "x", "kind": "fact"}))
            .await,
        app.call(
            Method::PATCH,
            &format!("/v1/memories/{id}"),
            &read_only,
            Some(json!({"content": "x"})),
        )
        .await,
        app.call(
            Method::DELETE,
            &format!("/v1/memories/{id}"),
            &read_only,
            None,
        )
        .await,
        app.get(&format!("/v1/memories/{id}"), &write_only).await,
        app.get("/v1/subjects/u/memories", &write_only).await,
        app.get("/v1/subjects/u/export", &read_only).await,
        app.call(Method::DELETE, "/v1/subjects/u", &read_only, None)
            .await,
        app.get("/v1/audit", &read_only).await,
    ];
    for response in cases {
        assert_error(response, 403, "insufficient_scope").await;
    }
}
