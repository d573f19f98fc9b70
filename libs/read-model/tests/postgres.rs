//! The read model cases on PostgreSQL, and what the database enforces on
//! the table whatever the adapter does.
#![cfg(feature = "postgres")]

mod cases;

use cases::memory;
use mnemo_domain::{MemoryId, MemoryKind, TenantId};
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::{APP_ROLE, SYSTEM_ROLE};
use mnemo_read_model::postgres::PostgresMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use sqlx::{Connection, PgConnection};

async fn model() -> (TestDatabase, PostgresMemoryReadModel) {
    let db = TestDatabase::new().await;
    let model = PostgresMemoryReadModel::new(db.tenant_pool(), db.system_pool());
    (db, model)
}

read_model_cases!(model);

/// No ids, no transaction: a closed pool would fail any statement.
#[tokio::test]
async fn get_many_of_no_ids_does_not_touch_the_database() {
    let (db, model) = model().await;
    db.tenant_pool().close().await;
    let t = TenantId::parse("t1").unwrap();
    assert!(model.get_many(&t, &[MemoryId::new()]).await.is_err());
    assert!(model.get_many(&t, &[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn rows_are_visible_to_their_tenant_only_and_content_never_to_the_system_role() {
    let (db, model) = model().await;
    for tenant in ["a", "b"] {
        model
            .upsert(
                &TenantId::parse(tenant).unwrap(),
                &memory("s1", MemoryKind::Fact, "secret", &[]),
            )
            .await
            .unwrap();
    }
    let count = "SELECT count(*) FROM memories";
    let mut app = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let none: i64 = sqlx::query_scalar(count).fetch_one(&mut app).await.unwrap();
    assert_eq!(none, 0);
    let mut tx = mnemo_pg::begin_tenant(&mut app, &TenantId::parse("a").unwrap())
        .await
        .unwrap();
    let own: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await.unwrap();
    assert_eq!(own, 1);
    let foreign = sqlx::query("UPDATE memories SET content = 'x' WHERE tenant_id = 'b'")
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(foreign.rows_affected(), 0);
    drop(tx);

    let mut system = PgConnection::connect_with(&db.options_as(SYSTEM_ROLE))
        .await
        .unwrap();
    let pairs: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT (tenant_id, subject_id)) FROM memories")
            .fetch_one(&mut system)
            .await
            .unwrap();
    assert_eq!(pairs, 2);
    let content = sqlx::query("SELECT content FROM memories")
        .fetch_all(&mut system)
        .await;
    assert!(content
        .unwrap_err()
        .to_string()
        .contains("permission denied"));
}
