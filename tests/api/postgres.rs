//! The same application on PostgreSQL (`MNEMO_DATABASE_URL`): the log, the
//! keys, the read model and the pipeline state in the database, behind
//! row-level security, with the in-process bus and qdrant-edge beside it.

use base64::Engine as _;
use serde_json::json;

use crate::helpers::spawn_app_with;

#[tokio::test]
async fn the_server_runs_on_postgresql_end_to_end() {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let url = db.url_as(mnemo_pg::APP_ROLE);
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let app = spawn_app_with(&[
        ("MNEMO_DATABASE_URL", url.as_str()),
        ("MNEMO_MASTER_KEY", key.as_str()),
    ])
    .await;
    let token = app.admin("acme");
    let id = app
        .memory(&token, "dora", "Grows tomatoes on her balcony")
        .await;
    app.memory(&token, "dora", "Her email is dora@example.com")
        .await;
    let listed = app.wait_for_list(&token, "dora", |m| m.len() == 2).await;
    assert!(listed.iter().any(|m| m["id"] == id.as_str()));
    let found = app
        .post_json(
            "/v1/subjects/dora/search",
            &token,
            json!({"query": "tomatoes", "k": 5}),
        )
        .await;
    assert_eq!(
        found["results"][0]["memory"]["content"],
        "Grows tomatoes on her balcony"
    );

    // The log is in PostgreSQL, sealed: no clear text, no PII.
    // Read as the superuser: row-level security hides every row from the
    // owner too.
    let owner = db.raw_pool("postgres").await;
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT event_type, payload::text FROM events ORDER BY global_position")
            .fetch_all(&owner)
            .await
            .unwrap();
    assert!(
        rows.iter().filter(|(t, _)| t == "MemoryCreated").count() == 2,
        "{rows:?}"
    );
    for (_, payload) in &rows {
        assert!(
            !payload.contains("tomatoes") && !payload.contains("dora@example.com"),
            "{payload}"
        );
    }
    // ...and nothing of it in the data dir's SQLite file (the bus only).
    let sqlite = mnemo_event_store::sqlite::connect(&app.dir.path().join("mnemo.db"))
        .await
        .unwrap();
    let local: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events")
        .fetch_one(&sqlite)
        .await
        .unwrap();
    assert_eq!(local, 0);

    // Erasure reaches every store and the content becomes unreadable.
    let receipt = app.erase(&token, "dora").await;
    assert_eq!(receipt["status"], "completed");
    app.wait_for_list(&token, "dora", |m| m.is_empty()).await;
    let keys: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM subject_keys")
        .fetch_one(&owner)
        .await
        .unwrap();
    assert_eq!(keys, 0);
}

/// The subject list on PostgreSQL: the same checks as on SQLite, through
/// the tenant's row-level security.
#[tokio::test]
async fn subjects_are_listed_on_postgresql() {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let url = db.url_as(mnemo_pg::APP_ROLE);
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let app = spawn_app_with(&[
        ("MNEMO_DATABASE_URL", url.as_str()),
        ("MNEMO_MASTER_KEY", key.as_str()),
    ])
    .await;
    crate::asof::check_subject_list(&app).await;
}
