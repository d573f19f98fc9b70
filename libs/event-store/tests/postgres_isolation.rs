//! What the PostgreSQL database itself enforces, whatever the adapter does:
//! row-level security per tenant, the narrow system read, and an event
//! table that refuses UPDATE, DELETE and TRUNCATE even for its owner.
#![cfg(feature = "postgres")]

use mnemo_event_store::postgres::PostgresEventStore;
use mnemo_event_store::testsuite::{event, tenant};
use mnemo_event_store::{EventStore, ExpectedVersion};
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::{APP_ROLE, SYSTEM_ROLE};
use sqlx::{Connection, PgConnection};

async fn seeded() -> (TestDatabase, PostgresEventStore) {
    let db = TestDatabase::new().await;
    let store = PostgresEventStore::new(db.tenant_pool(), db.system_pool());
    for (t, n) in [("tenant-a", 2), ("tenant-b", 3)] {
        for _ in 0..n {
            store
                .append(
                    &tenant(t),
                    "memory-1",
                    ExpectedVersion::Any,
                    vec![event("MemoryCreated", None, "alice")],
                )
                .await
                .unwrap();
        }
    }
    (db, store)
}

const RAW_INSERT: &str = "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, \
     event_type, schema_version, actor, payload, metadata, recorded_at) \
     VALUES (gen_random_uuid()::text, $1, 'raw', 99, 'MemoryCreated', 1, 'mallory', '{}', '{}', now())";

async fn count(conn: &mut PgConnection, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(conn).await.unwrap()
}

#[tokio::test]
async fn without_a_tenant_the_app_role_sees_nothing_and_inserts_nothing() {
    let (db, _store) = seeded().await;
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    assert_eq!(count(&mut conn, "SELECT count(*) FROM events").await, 0);
    let insert = sqlx::query(RAW_INSERT)
        .bind("tenant-a")
        .execute(&mut conn)
        .await;
    let error = insert.unwrap_err().to_string();
    assert!(error.contains("row-level security"), "{error}");
    // An empty setting (what a connection keeps after a tenant transaction)
    // matches nothing either.
    sqlx::query("SELECT set_config('app.tenant_id', '', false)")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(count(&mut conn, "SELECT count(*) FROM events").await, 0);
}

#[tokio::test]
async fn a_tenant_cannot_see_or_write_another_tenants_events_even_with_raw_sql() {
    let (db, _store) = seeded().await;
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let mut tx = mnemo_pg::begin_tenant(&mut conn, &tenant("tenant-a"))
        .await
        .unwrap();
    // No WHERE clause at all: the policy is the filter.
    assert_eq!(count(&mut tx, "SELECT count(*) FROM events").await, 2);
    assert_eq!(
        count(
            &mut tx,
            "SELECT count(*) FROM events WHERE tenant_id = 'tenant-b'"
        )
        .await,
        0
    );
    let insert = sqlx::query(RAW_INSERT)
        .bind("tenant-b")
        .execute(&mut *tx)
        .await;
    assert!(insert
        .unwrap_err()
        .to_string()
        .contains("row-level security"));
    tx.rollback().await.unwrap();
    // Nor can the app role take the system role's wider view.
    let set_role = sqlx::query(&format!("SET ROLE {SYSTEM_ROLE}"))
        .execute(&mut conn)
        .await;
    assert!(set_role.is_err());
}

#[tokio::test]
async fn the_system_role_reads_every_tenant_and_writes_nothing() {
    let (db, _store) = seeded().await;
    let mut conn = PgConnection::connect_with(&db.options_as(SYSTEM_ROLE))
        .await
        .unwrap();
    assert_eq!(count(&mut conn, "SELECT count(*) FROM events").await, 5);
    sqlx::query("SELECT set_config('app.tenant_id', 'tenant-a', false)")
        .execute(&mut conn)
        .await
        .unwrap();
    let insert = sqlx::query(RAW_INSERT)
        .bind("tenant-a")
        .execute(&mut conn)
        .await;
    assert!(insert
        .unwrap_err()
        .to_string()
        .contains("permission denied"));
}

#[tokio::test]
async fn update_delete_and_truncate_are_refused_for_app_owner_and_superuser() {
    let (db, store) = seeded().await;
    let statements = [
        "UPDATE events SET actor = 'mallory'",
        "DELETE FROM events",
        "TRUNCATE events",
    ];

    let mut app = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    for sql in statements {
        let mut tx = mnemo_pg::begin_tenant(&mut app, &tenant("tenant-a"))
            .await
            .unwrap();
        let error = sqlx::query(sql).execute(&mut *tx).await.unwrap_err();
        assert!(
            error.to_string().contains("permission denied"),
            "{sql}: {error}"
        );
    }

    // The owner and a superuser hold every privilege; the triggers still
    // refuse, with the tenant set so rows are visible to the statement.
    let mut owner = db.owner_connection().await;
    let mut superuser = PgConnection::connect_with(&db.admin_options())
        .await
        .unwrap();
    for conn in [&mut owner, &mut superuser] {
        for sql in statements {
            let mut tx = mnemo_pg::begin_tenant(conn, &tenant("tenant-a"))
                .await
                .unwrap();
            let error = sqlx::query(sql).execute(&mut *tx).await.unwrap_err();
            assert!(error.to_string().contains("append-only"), "{sql}: {error}");
        }
    }

    let stream = store
        .read_stream(&tenant("tenant-a"), "memory-1")
        .await
        .unwrap();
    assert_eq!(stream.len(), 2);
    assert!(stream.iter().all(|e| e.metadata.actor == "alice"));
}

#[tokio::test]
async fn an_erasure_redacts_legacy_plain_fields_and_the_log_refuses_any_other_update() {
    let (db, store) = seeded().await;
    let t = tenant("tenant-a");
    let mut owner = db.owner_connection().await;
    // Events as stored before tags, sessions and message ids were sealed
    // (the adapter now refuses the plain form, so past it).
    for (subject, payload) in [
        (
            "erased",
            r#"{"tags": ["legacy-tag"], "session": "s-1", "content": {"$erased": true}}"#,
        ),
        ("kept", r#"{"tags": ["kept-tag"]}"#),
    ] {
        let mut tx = mnemo_pg::begin_tenant(&mut owner, &t).await.unwrap();
        sqlx::query(
            "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, subject_id, \
             event_type, schema_version, actor, payload, metadata, recorded_at) \
             VALUES (gen_random_uuid()::text, $1, 'legacy-' || $2, 1, $2, 'MemoryCreated', 1, \
             'alice', $3::jsonb, '{\"actor\": \"alice\", \"correlation_id\": \"jane@example.com\"}', now())",
        )
        .bind(t.as_str())
        .bind(subject)
        .bind(payload)
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    let erased = mnemo_domain::SubjectId::parse("erased").unwrap();
    assert_eq!(store.redact_legacy(&t, &erased).await.unwrap(), 1);
    let events = store.read_subject(&t, &erased).await.unwrap();
    assert_eq!(
        events[0].payload["tags"],
        serde_json::json!({"$erased": true})
    );
    assert_eq!(
        events[0].payload["session"],
        serde_json::json!({"$erased": true})
    );
    assert_eq!(events[0].metadata.correlation_id, None);
    assert_eq!(events[0].metadata.actor, "alice");
    let kept = mnemo_domain::SubjectId::parse("kept").unwrap();
    let other = store.read_subject(&t, &kept).await.unwrap();
    assert_eq!(other[0].payload["tags"], serde_json::json!(["kept-tag"]));

    // The app role may change payload and metadata only as the redaction
    // does; the trigger refuses anything else, for the owner too.
    let mut app = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    for conn in [&mut app, &mut owner] {
        for sql in [
            "UPDATE events SET payload = '{}'::jsonb",
            "UPDATE events SET payload = events_redacted(payload) || '{\"content\": 1}'::jsonb",
            "UPDATE events SET metadata = '{}'::jsonb",
        ] {
            let mut tx = mnemo_pg::begin_tenant(conn, &t).await.unwrap();
            let error = sqlx::query(sql).execute(&mut *tx).await.unwrap_err();
            assert!(error.to_string().contains("append-only"), "{sql}: {error}");
        }
    }
}
