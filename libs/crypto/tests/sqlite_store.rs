//! What only the SQLite store has: persistence, wrapping under the master
//! key, and erasure reaching the bytes of the database file.
#![cfg(feature = "sqlite")]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{open_pool, subject, tenant};
use mnemo_crypto::{CryptoError, MasterKey, SqliteSubjectKeyStore, SubjectCipher, SubjectKeyStore};
use serde_json::json;
use sqlx::SqlitePool;

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

async fn wrapped_key(pool: &SqlitePool, t: &str, s: &str) -> Vec<u8> {
    sqlx::query_scalar(
        "SELECT wrapped_key FROM subject_keys WHERE tenant_id = ?1 AND subject_id = ?2",
    )
    .bind(t)
    .bind(s)
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn checkpoint(pool: &SqlitePool) {
    let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(busy, 0, "checkpoint was blocked");
}

#[tokio::test]
async fn key_persists_across_store_recreation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.db");
    let master = Arc::new(MasterKey::generate());
    let (t, s) = (tenant("t1"), subject("alice"));

    let pool = open_pool(&path, true).await;
    let cipher = SubjectCipher::new(Arc::new(SqliteSubjectKeyStore::new(
        pool.clone(),
        Arc::clone(&master),
    )));
    let mut sealed = json!({"text": {"$text": "remember me"}});
    cipher.seal(&t, &s, &mut sealed).await.unwrap();
    let kid = sealed["text"]["$sealed"]["kid"].clone();
    drop(cipher);
    pool.close().await;

    // A new pool and store on the same file, with the master key reloaded
    // from its base64 form as a restarted process would.
    let master = Arc::new(MasterKey::from_base64(&master.to_base64()).unwrap());
    let store = Arc::new(SqliteSubjectKeyStore::new(
        open_pool(&path, false).await,
        master,
    ));
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
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("keys.db"), true).await;
    let (t, s) = (tenant("t1"), subject("alice"));
    let right = Arc::new(MasterKey::generate());
    let cipher = SubjectCipher::new(Arc::new(SqliteSubjectKeyStore::new(pool.clone(), right)));
    let mut sealed = json!({"text": {"$text": "secret"}});
    cipher.seal(&t, &s, &mut sealed).await.unwrap();
    let kid = sealed["text"]["$sealed"]["kid"]
        .as_str()
        .unwrap()
        .to_owned();

    let wrong = Arc::new(MasterKey::generate());
    let store = Arc::new(SqliteSubjectKeyStore::new(pool.clone(), wrong));
    for err in [
        store.get_or_create(&t, &s).await.unwrap_err(),
        store.get(&t, &s, &kid).await.unwrap_err(),
    ] {
        assert!(matches!(err, CryptoError::WrongMasterKey { .. }), "{err}");
        assert_eq!(err.code(), "wrong_master_key");
    }
    // Opening is an error too, not a silent "erased".
    let mut read = sealed.clone();
    let err = SubjectCipher::new(store)
        .open(&t, &s, &mut read)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "wrong_master_key");
    assert_eq!(read, sealed);

    // A different key that claims the right fingerprint still cannot
    // decrypt: the fingerprint check is a diagnosis, the AEAD is the lock.
    let impostor = Arc::new(MasterKey::generate());
    sqlx::query("UPDATE subject_keys SET master_key_id = ?1")
        .bind(impostor.id())
        .execute(&pool)
        .await
        .unwrap();
    let err = SqliteSubjectKeyStore::new(pool.clone(), impostor)
        .get(&t, &s, &kid)
        .await
        .unwrap_err();
    assert!(matches!(err, CryptoError::Unwrap { .. }), "{err}");
}

#[tokio::test]
async fn wrapped_key_moved_to_another_subject_does_not_unwrap() {
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("keys.db"), true).await;
    let master = Arc::new(MasterKey::generate());
    let store = SqliteSubjectKeyStore::new(pool.clone(), master);
    let t = tenant("t1");
    store.get_or_create(&t, &subject("alice")).await.unwrap();
    store.get_or_create(&t, &subject("bob")).await.unwrap();

    // Copy Alice's wrapped key into Bob's row: a database-level attacker
    // trying to make Bob's ciphertexts open with a key they know.
    let alices = wrapped_key(&pool, "t1", "alice").await;
    sqlx::query("UPDATE subject_keys SET wrapped_key = ?1 WHERE subject_id = 'bob'")
        .bind(&alices)
        .execute(&pool)
        .await
        .unwrap();
    let err = store.get_or_create(&t, &subject("bob")).await.unwrap_err();
    assert_eq!(err.code(), "key_unwrap_failed");
}

#[tokio::test]
async fn row_records_master_key_id_and_creation_time() {
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("keys.db"), true).await;
    let master = Arc::new(MasterKey::generate());
    let store = SqliteSubjectKeyStore::new(pool.clone(), Arc::clone(&master));
    let key = store
        .get_or_create(&tenant("t1"), &subject("alice"))
        .await
        .unwrap();
    let (key_id, master_key_id, created_at): (String, String, String) =
        sqlx::query_as("SELECT key_id, master_key_id, created_at FROM subject_keys")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(key_id, key.key_id);
    assert_eq!(master_key_id, master.id());
    // RFC 3339, UTC, milliseconds: 2025-01-31T12:34:56.789Z
    assert_eq!(created_at.len(), 24, "{created_at}");
    assert!(created_at.ends_with('Z') && created_at.as_bytes()[10] == b'T');
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn separate_pools_on_one_file_agree_on_the_first_key() {
    // Two stores with their own pools stand in for two processes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.db");
    let master = Arc::new(MasterKey::generate());
    let a: Arc<dyn SubjectKeyStore> = Arc::new(SqliteSubjectKeyStore::new(
        open_pool(&path, true).await,
        Arc::clone(&master),
    ));
    let b: Arc<dyn SubjectKeyStore> = Arc::new(SqliteSubjectKeyStore::new(
        open_pool(&path, false).await,
        Arc::clone(&master),
    ));
    let t = tenant("t1");
    for round in 0..10 {
        let s = subject(&format!("s-{round}"));
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let store = Arc::clone(if i % 2 == 0 { &a } else { &b });
                let (t, s) = (t.clone(), s.clone());
                tokio::spawn(async move { store.get_or_create(&t, &s).await.unwrap() })
            })
            .collect();
        let mut ids = Vec::new();
        for task in tasks {
            ids.push(task.await.unwrap().key_id);
        }
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    }
}

#[tokio::test]
async fn destroyed_key_bytes_leave_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.db");
    let wal = dir.path().join("keys.db-wal");
    let pool = open_pool(&path, true).await;
    let store = SqliteSubjectKeyStore::new(pool.clone(), Arc::new(MasterKey::generate()));
    let t = tenant("t1");
    // Neighbours on the same page, so the row is deleted from a live page
    // rather than a page that is freed whole.
    for i in 0..20 {
        store
            .get_or_create(&t, &subject(&format!("n-{i}")))
            .await
            .unwrap();
    }
    let target = subject("alice");
    store.get_or_create(&t, &target).await.unwrap();
    let doomed = wrapped_key(&pool, "t1", "alice").await;
    let neighbour = wrapped_key(&pool, "t1", "n-7").await;

    checkpoint(&pool).await;
    // Sanity: the search can see a wrapped key in the file at all.
    assert!(contains(&file_bytes(&path), &doomed));

    assert_eq!(store.destroy(&t, &target).await.unwrap(), 1);
    checkpoint(&pool).await;

    let db = file_bytes(&path);
    assert!(
        !contains(&db, &doomed),
        "destroyed wrapped key still in the file"
    );
    assert!(!contains(&file_bytes(&wal), &doomed));
    assert!(contains(&db, &neighbour));
}

#[tokio::test]
async fn keys_from_before_generations_are_generation_zero_and_count_on() {
    // A database as it was before migration 0007: a key row without a
    // generation, written as the store then wrote it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.db");
    let pool = open_pool(&path, false).await;
    sqlx::raw_sql(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/sqlite/0002_subject_keys.sql"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let master = Arc::new(MasterKey::generate());
    let (t, s) = (tenant("t1"), subject("alice"));
    let key = mnemo_crypto::DataKey::generate();
    let wrapped = master.wrap_data_key(&t, &s, "dk_old", &key).unwrap();
    sqlx::query(
        "INSERT INTO subject_keys (tenant_id, subject_id, key_id, wrapped_key, master_key_id, created_at) \
         VALUES ('t1', 'alice', 'dk_old', ?1, ?2, '2024-01-01T00:00:00.000Z')",
    )
    .bind(&wrapped)
    .bind(master.id())
    .execute(&pool)
    .await
    .unwrap();
    sqlx::raw_sql(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/sqlite/0007_subject_key_generations.sql"
    )))
    .execute(&pool)
    .await
    .unwrap();

    let store = SqliteSubjectKeyStore::new(pool.clone(), master);
    let old = store.get_or_create(&t, &s).await.unwrap();
    assert_eq!(old.key_id, "dk_old");
    assert_eq!(old.generation, mnemo_crypto::LEGACY_GENERATION);
    assert_eq!(store.live_generation(&t, &s).await.unwrap(), Some(0));

    assert_eq!(store.destroy(&t, &s).await.unwrap(), 1);
    let (key_id, generation): (String, i64) =
        sqlx::query_as("SELECT key_id, generation FROM subject_key_tombstones")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((key_id.as_str(), generation), ("dk_old", 0));
    assert_eq!(store.get_or_create(&t, &s).await.unwrap().generation, 1);
}

#[tokio::test]
async fn a_tombstone_keeps_no_key_material() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.db");
    let pool = open_pool(&path, true).await;
    let store = SqliteSubjectKeyStore::new(pool.clone(), Arc::new(MasterKey::generate()));
    let (t, s) = (tenant("t1"), subject("alice"));
    let key = store.get_or_create(&t, &s).await.unwrap();
    let doomed = wrapped_key(&pool, "t1", "alice").await;
    store.destroy(&t, &s).await.unwrap();

    let columns: Vec<String> =
        sqlx::query_scalar("SELECT name FROM pragma_table_info('subject_key_tombstones')")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        columns,
        [
            "tenant_id",
            "subject_id",
            "key_id",
            "generation",
            "destroyed_at"
        ]
    );
    let (key_id, generation, destroyed_at): (String, i64, String) = sqlx::query_as(
        "SELECT key_id, generation, destroyed_at FROM subject_key_tombstones \
         WHERE tenant_id = 't1' AND subject_id = 'alice'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((key_id, generation), (key.key_id, 1));
    assert!(destroyed_at.ends_with('Z'), "{destroyed_at}");
    checkpoint(&pool).await;
    assert!(!contains(&file_bytes(&path), &doomed));
}
