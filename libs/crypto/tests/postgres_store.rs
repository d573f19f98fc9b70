//! What only the PostgreSQL store has: persistence across stores, wrapping
//! under the master key, a destroy that deletes the row, and row-level
//! security that keeps a tenant to its own keys.
#![cfg(feature = "postgres")]

mod common;

use std::sync::Arc;

use common::{subject, tenant};
use mnemo_crypto::{
    CryptoError, MasterKey, PostgresSubjectKeyStore, SubjectCipher, SubjectKeyStore,
};
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::{TenantPool, APP_ROLE};
use serde_json::json;
use sqlx::{Connection, PgConnection};

async fn rows_as_superuser(db: &TestDatabase, sql: &str) -> i64 {
    let mut conn = PgConnection::connect_with(&db.admin_options())
        .await
        .unwrap();
    sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap()
}

#[tokio::test]
async fn key_persists_across_store_recreation() {
    let db = TestDatabase::new().await;
    let master = Arc::new(MasterKey::generate());
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(Arc::new(PostgresSubjectKeyStore::new(
        db.tenant_pool(),
        Arc::clone(&master),
    )));
    let mut sealed = json!({"text": {"$text": "remember me"}});
    cipher.seal(&t, &s, &mut sealed).await.unwrap();
    let kid = sealed["text"]["$sealed"]["kid"].clone();
    drop(cipher);

    // A new pool and store, with the master key reloaded from its base64
    // form as a restarted process would.
    let master = Arc::new(MasterKey::from_base64(&master.to_base64()).unwrap());
    let pool = TenantPool::connect_with(db.options_as(APP_ROLE), 2)
        .await
        .unwrap();
    let store = Arc::new(PostgresSubjectKeyStore::new(pool, master));
    assert_eq!(
        store.get_or_create(&t, &s).await.unwrap().key_id,
        kid.as_str().unwrap()
    );
    let mut read = sealed.clone();
    SubjectCipher::new(store)
        .open(&t, &s, &mut read)
        .await
        .unwrap();
    assert_eq!(read["text"]["$text"], "remember me");
}

#[tokio::test]
async fn wrong_master_key_cannot_unwrap() {
    let db = TestDatabase::new().await;
    let (t, s) = (tenant("t1"), subject("alice"));
    let right = PostgresSubjectKeyStore::new(db.tenant_pool(), Arc::new(MasterKey::generate()));
    let key = right.get_or_create(&t, &s).await.unwrap();
    let wrong = PostgresSubjectKeyStore::new(db.tenant_pool(), Arc::new(MasterKey::generate()));
    for err in [
        wrong.get_or_create(&t, &s).await.unwrap_err(),
        wrong.get(&t, &s, &key.key_id).await.unwrap_err(),
    ] {
        assert!(matches!(err, CryptoError::WrongMasterKey { .. }), "{err}");
    }
}

#[tokio::test]
async fn destroy_deletes_the_row() {
    let db = TestDatabase::new().await;
    let store = PostgresSubjectKeyStore::new(db.tenant_pool(), Arc::new(MasterKey::generate()));
    let t = tenant("t1");
    store.get_or_create(&t, &subject("alice")).await.unwrap();
    store.get_or_create(&t, &subject("bob")).await.unwrap();
    let alices = "SELECT count(*) FROM subject_keys WHERE subject_id = 'alice'";
    assert_eq!(rows_as_superuser(&db, alices).await, 1);
    assert_eq!(store.destroy(&t, &subject("alice")).await.unwrap(), 1);
    // Seen past row-level security: the row is gone, not hidden.
    assert_eq!(rows_as_superuser(&db, alices).await, 0);
    assert_eq!(
        rows_as_superuser(&db, "SELECT count(*) FROM subject_keys").await,
        1
    );
}

#[tokio::test]
async fn row_level_security_keeps_tenants_to_their_own_keys() {
    let db = TestDatabase::new().await;
    let store = PostgresSubjectKeyStore::new(db.tenant_pool(), Arc::new(MasterKey::generate()));
    store
        .get_or_create(&tenant("t1"), &subject("alice"))
        .await
        .unwrap();
    store
        .get_or_create(&tenant("t2"), &subject("alice"))
        .await
        .unwrap();
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let all = "SELECT count(*) FROM subject_keys";
    let none: i64 = sqlx::query_scalar(all).fetch_one(&mut conn).await.unwrap();
    assert_eq!(none, 0, "no tenant, no keys");
    let mut tx = mnemo_pg::begin_tenant(&mut conn, &tenant("t1"))
        .await
        .unwrap();
    let own: i64 = sqlx::query_scalar(all).fetch_one(&mut *tx).await.unwrap();
    assert_eq!(own, 1);
    // A foreign tenant's key cannot be deleted from here (it is invisible),
    // nor can a key be rewritten at all.
    let deleted = sqlx::query("DELETE FROM subject_keys WHERE tenant_id = 't2'")
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(deleted.rows_affected(), 0);
    let update = sqlx::query("UPDATE subject_keys SET wrapped_key = '\\x00'")
        .execute(&mut *tx)
        .await;
    assert!(update
        .unwrap_err()
        .to_string()
        .contains("permission denied"));
    drop(tx);
    assert_eq!(rows_as_superuser(&db, all).await, 2);
}

#[tokio::test]
async fn destroy_leaves_a_tombstone_with_the_generation_only() {
    let db = TestDatabase::new().await;
    let store = PostgresSubjectKeyStore::new(db.tenant_pool(), Arc::new(MasterKey::generate()));
    let (t, s) = (tenant("t1"), subject("alice"));
    let first = store.get_or_create(&t, &s).await.unwrap();
    assert_eq!(first.generation, 1);
    assert_eq!(store.destroy(&t, &s).await.unwrap(), 1);
    assert_eq!(store.live_generation(&t, &s).await.unwrap(), None);
    assert_eq!(store.get_or_create(&t, &s).await.unwrap().generation, 2);

    let tombstones = "SELECT count(*) FROM subject_key_tombstones \
                      WHERE subject_id = 'alice' AND generation = 1";
    assert_eq!(rows_as_superuser(&db, tombstones).await, 1);
    let key_id = format!(
        "SELECT count(*) FROM subject_key_tombstones WHERE key_id = '{}'",
        first.key_id
    );
    assert_eq!(rows_as_superuser(&db, &key_id).await, 1);
    // No key material beside it: the columns are ids, a number and a time.
    let wrapped = "SELECT count(*) FROM information_schema.columns \
                   WHERE table_name = 'subject_key_tombstones' AND data_type = 'bytea'";
    assert_eq!(rows_as_superuser(&db, wrapped).await, 0);
}

#[tokio::test]
async fn tombstones_are_per_tenant_and_never_rewritten() {
    let db = TestDatabase::new().await;
    let store = PostgresSubjectKeyStore::new(db.tenant_pool(), Arc::new(MasterKey::generate()));
    let s = subject("alice");
    for t in ["t1", "t2"] {
        store.get_or_create(&tenant(t), &s).await.unwrap();
        store.destroy(&tenant(t), &s).await.unwrap();
    }
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let mut tx = mnemo_pg::begin_tenant(&mut conn, &tenant("t1"))
        .await
        .unwrap();
    let all = "SELECT count(*) FROM subject_key_tombstones";
    let own: i64 = sqlx::query_scalar(all).fetch_one(&mut *tx).await.unwrap();
    assert_eq!(own, 1);
    let delete = sqlx::query("DELETE FROM subject_key_tombstones")
        .execute(&mut *tx)
        .await;
    assert!(delete
        .unwrap_err()
        .to_string()
        .contains("permission denied"));
    drop(tx);
    assert_eq!(rows_as_superuser(&db, all).await, 2);
}
