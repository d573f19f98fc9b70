use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

#[tokio::test]
async fn a_memory_is_written_read_corrected_and_deleted_with_its_history() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let created = app
        .create_memory(&token, "user-1", json!({"content": "Prefers green tea", "kind": "preference", "tags": ["Drinks", "tea"], "confidence": 0.8}))
        .await;
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let memory: Value = created.json().await.unwrap();
    let id = memory["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/v1/memories/{id}"));
    assert_eq!(
        memory["importance"], 0.8,
        "0.3 + 0.5*0.8 + 0.1 for a preference"
    );
    assert_eq!(memory["tags"], json!(["drinks", "tea"]));
    assert_eq!(memory["provenance"]["producer"]["strategy"], "api");

    let read = app.get_json(&format!("/v1/memories/{id}"), &token).await;
    assert_eq!(read["content"], "Prefers green tea");
    assert_eq!(read["version"], 1);

    let revised = app
        .call(
            Method::PATCH,
            &format!("/v1/memories/{id}"),
            &token,
            Some(json!({"content": "Prefers oolong tea", "reason": "the user corrected it"})),
        )
        .await;
    assert_eq!(revised.status(), 200);
    let revised: Value = revised.json().await.unwrap();
    assert_eq!(revised["version"], 2);
    assert_eq!(revised["content"], "Prefers oolong tea");

    let deleted = app
        .call(
            Method::DELETE,
            &format!("/v1/memories/{id}"),
            &token,
            Some(json!({"reason": "asked to forget"})),
        )
        .await;
    assert_eq!(deleted.status(), 200);
    assert_eq!(deleted.json::<Value>().await.unwrap()["state"], "deleted");
    // Deleting again records nothing new.
    let again = app
        .call(Method::DELETE, &format!("/v1/memories/{id}"), &token, None)
        .await;
    assert_eq!(again.status(), 200);

    let history = app
        .get_json(&format!("/v1/memories/{id}/history"), &token)
        .await;
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 3);
    assert_eq!(versions[0]["event_type"], "MemoryCreated");
    assert_eq!(versions[0]["memory"]["content"], "Prefers green tea");
    assert_eq!(versions[1]["event_type"], "MemoryRevised");
    assert_eq!(versions[1]["reason"], "the user corrected it");
    assert_eq!(versions[1]["actor"], "acme-admin");
    assert_eq!(versions[1]["memory"]["content"], "Prefers oolong tea");
    assert_eq!(versions[2]["event_type"], "MemoryDeleted");
    assert_eq!(versions[2]["reason"], "asked to forget");
    assert!(versions[2]["recorded_at"].as_str().is_some());

    let patch_deleted = app
        .call(
            Method::PATCH,
            &format!("/v1/memories/{id}"),
            &token,
            Some(json!({"content": "x"})),
        )
        .await;
    assert_error(patch_deleted, 409, "memory_deleted").await;
}

#[tokio::test]
async fn a_stale_version_is_refused() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let id = app.memory(&token, "u", "Lives in Lyon").await;
    let path = format!("/v1/memories/{id}");
    let first = app
        .call(
            Method::PATCH,
            &path,
            &token,
            Some(json!({"content": "Lives in Paris", "expected_version": 1})),
        )
        .await;
    assert_eq!(first.status(), 200);
    let stale = app
        .call(
            Method::PATCH,
            &path,
            &token,
            Some(json!({"content": "Lives in Rome", "expected_version": 1})),
        )
        .await;
    assert_error(stale, 409, "version_conflict").await;
    let stale_header = app
        .client
        .patch(format!("{}{}", app.address, path))
        .bearer_auth(&token)
        .header("If-Match", "\"1\"")
        .json(&json!({"content": "Lives in Rome"}))
        .send()
        .await
        .unwrap();
    assert_error(stale_header, 409, "version_conflict").await;
    let read = app.get_json(&path, &token).await;
    assert_eq!(read["content"], "Lives in Paris");
    assert_eq!(read["version"], 2);
}

#[tokio::test]
async fn lists_filter_by_kind_tag_and_state_and_page() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    for (content, kind, tags) in [
        ("Likes jazz", "preference", json!(["music"])),
        ("Has two cats", "fact", json!(["pets"])),
        (
            "Decided to learn piano",
            "decision",
            json!(["music", "plans"]),
        ),
    ] {
        let response = app
            .create_memory(
                &token,
                "u",
                json!({"content": content, "kind": kind, "tags": tags}),
            )
            .await;
        assert_eq!(response.status(), 201);
    }
    let gone = app.memory(&token, "u", "Temporary").await;
    app.call(
        Method::DELETE,
        &format!("/v1/memories/{gone}"),
        &token,
        None,
    )
    .await;
    app.wait_for_list(&token, "u", |m| m.len() == 3).await;
    // The deletion is projected too (the list above can match before it is).
    app.wait_for(
        "/v1/subjects/u/memories?state=deleted",
        &token,
        "deletion projected",
        |b| b["memories"][0]["id"] == gone.as_str(),
    )
    .await;
    app.wait_for_list(&token, "u", |m| {
        m.len() == 3 && m.iter().all(|x| x["state"] == "active")
    })
    .await;

    let music = app
        .get_json("/v1/subjects/u/memories?tag=music", &token)
        .await;
    assert_eq!(music["memories"].as_array().unwrap().len(), 2);
    let both = app
        .get_json("/v1/subjects/u/memories?tag=music,plans", &token)
        .await;
    assert_eq!(both["memories"][0]["content"], "Decided to learn piano");
    let facts = app
        .get_json("/v1/subjects/u/memories?kind=fact", &token)
        .await;
    assert_eq!(facts["memories"][0]["content"], "Has two cats");
    let deleted = app
        .get_json("/v1/subjects/u/memories?state=deleted", &token)
        .await;
    assert_eq!(deleted["memories"][0]["id"], gone.as_str());

    let page1 = app
        .get_json("/v1/subjects/u/memories?limit=2", &token)
        .await;
    assert_eq!(page1["memories"].as_array().unwrap().len(), 2);
    let cursor = page1["next_cursor"].as_str().unwrap();
    let page2 = app
        .get_json(
            &format!("/v1/subjects/u/memories?limit=2&cursor={cursor}"),
            &token,
        )
        .await;
    assert_eq!(page2["memories"].as_array().unwrap().len(), 1);
    assert!(page2["next_cursor"].is_null());
    assert_eq!(
        page2["memories"][0]["content"], "Likes jazz",
        "newest first"
    );
}

#[tokio::test]
async fn export_holds_messages_and_memories_with_history_and_is_recorded() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u",
        json!([{"role": "user", "content": "I moved to Berlin", "id": "m1"}]),
    )
    .await;
    let id = app.memory(&token, "u", "Lives in Berlin").await;
    app.call(
        Method::PATCH,
        &format!("/v1/memories/{id}"),
        &token,
        Some(json!({"tags": ["home"]})),
    )
    .await;
    let export = app.get_json("/v1/subjects/u/export", &token).await;
    assert_eq!(export["subject"], "u");
    assert_eq!(export["messages"][0]["content"], "I moved to Berlin");
    assert_eq!(export["messages"][0]["message_id"], "m1");
    assert_eq!(
        export["memories"][0]["memory"]["content"],
        "Lives in Berlin"
    );
    assert_eq!(
        export["memories"][0]["history"].as_array().unwrap().len(),
        2
    );
    let events = app.all_events("acme").await;
    let recorded = events
        .iter()
        .find(|e| e["type"] == "ExportGenerated")
        .expect("export recorded");
    assert_eq!(recorded["payload"]["messages"], 1);
    assert_eq!(recorded["payload"]["memories"], 1);
    assert_eq!(recorded["subject"], "u");
}

#[tokio::test]
async fn audit_filters_by_subject_actor_type_and_time_and_pages() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "u1",
        json!([{"role": "user", "content": "hello there friend"}]),
    )
    .await;
    app.memory(&token, "u2", "Owns a bike").await;
    let other_actor = app.token_as("acme", "agent-7", &[mnemo_auth::Scope::MemoriesWrite], None);
    app.memory(&other_actor, "u2", "Owns a car").await;

    let by_subject = app.get_json("/v1/audit?subject=u1", &token).await;
    assert_eq!(by_subject["events"].as_array().unwrap().len(), 1);
    let by_type = app.get_json("/v1/audit?type=MemoryCreated", &token).await;
    assert_eq!(by_type["events"].as_array().unwrap().len(), 2);
    let by_actor = app.get_json("/v1/audit?actor=agent-7", &token).await;
    let by_actor = by_actor["events"].as_array().unwrap();
    assert_eq!(by_actor.len(), 1);
    assert_eq!(by_actor[0]["payload"]["content"], "Owns a car");
    let future = app
        .get_json("/v1/audit?from=2999-01-01T00:00:00Z", &token)
        .await;
    assert!(future["events"].as_array().unwrap().is_empty());
    let page = app.get_json("/v1/audit?limit=2", &token).await;
    let cursor = page["next_cursor"].as_i64().unwrap();
    let rest = app
        .get_json(&format!("/v1/audit?cursor={cursor}"), &token)
        .await;
    assert_eq!(rest["events"].as_array().unwrap().len(), 1);
    let unknown = app.get("/v1/audit?type=Nonsense", &token).await;
    assert_error(unknown, 400, "invalid_type").await;
}

#[tokio::test]
async fn a_direct_memory_can_cite_the_messages_it_comes_from() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let posted: Value = app
        .post_messages(
            &token,
            "u",
            json!([{"role": "user", "content": "I moved to Lyon", "id": "D1:3"}]),
        )
        .await
        .json()
        .await
        .unwrap();
    let created = app
        .create_memory(
            &token,
            "u",
            json!({"content": "Lives in Lyon", "kind": "fact", "sources": ["D1:3"]}),
        )
        .await;
    assert_eq!(created.status(), 201);
    let memory: Value = created.json().await.unwrap();
    assert_eq!(
        memory["provenance"]["source_event_ids"][0],
        posted["events"][0]["event_id"]
    );
    // Another subject's message, or an unknown id, is not a source.
    app.post_messages(
        &token,
        "other",
        json!([{"role": "user", "content": "hello there", "id": "D9:9"}]),
    )
    .await;
    for bad in ["D9:9", "nope"] {
        let response = app
            .create_memory(
                &token,
                "u",
                json!({"content": "x", "kind": "fact", "sources": [bad]}),
            )
            .await;
        assert_error(response, 422, "unknown_source").await;
    }
}
