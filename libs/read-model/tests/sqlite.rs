//! The read model cases on SQLite, and what reaches the database file.
#![cfg(feature = "sqlite")]

mod cases;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cases::{memory, Fixture, LegacyRows};
use mnemo_domain::{Memory, MemoryId, MemoryKind, SessionId, SubjectId, SubjectText, TenantId};
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::{MemoryFilter, MemoryReadModel};
use sqlx::SqlitePool;

async fn model() -> (tempfile::TempDir, Fixture) {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
        .await
        .unwrap();
    let cipher = cases::cipher();
    let fixture = Fixture {
        model: Box::new(SqliteMemoryReadModel::new(pool.clone(), cipher.clone())),
        cipher,
        legacy: Box::new(Legacy(pool)),
    };
    (dir, fixture)
}

read_model_cases!(model);

/// Rows as the read model wrote them before `0008_sealed_read_model.sql`.
struct Legacy(SqlitePool);

#[async_trait]
impl LegacyRows for Legacy {
    async fn insert_legacy(&self, tenant: &TenantId, m: &Memory) {
        sqlx::query(
            "INSERT INTO memories (tenant_id, memory_id, subject_id, kind, content, tags, confidence, \
             importance, state, version, provenance, session_id, agent_id, reinforcements, superseded_by, \
             created_at, updated_at, relations) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(tenant.as_str())
        .bind(m.id.to_string())
        .bind(m.subject.as_str())
        .bind(m.kind.as_str())
        .bind(m.content.as_text().unwrap())
        .bind(serde_json::to_string(&m.tags).unwrap())
        .bind(f64::from(m.confidence))
        .bind(f64::from(m.importance))
        .bind(m.state.as_str())
        .bind(m.version as i64)
        .bind(serde_json::to_string(&m.provenance).unwrap())
        .bind(m.session.as_ref().map(SessionId::as_str))
        .bind(m.agent.as_ref().map(|a| a.as_str()))
        .bind(i64::from(m.reinforcements))
        .bind(m.superseded_by.map(|id| id.to_string()))
        .bind(m.created_at.timestamp_micros())
        .bind(m.updated_at.timestamp_micros())
        .bind(serde_json::to_string(&m.relations).unwrap())
        .execute(&self.0)
        .await
        .unwrap();
        for tag in &m.tags {
            sqlx::query(
                "INSERT OR IGNORE INTO memory_tags (tenant_id, memory_id, tag) VALUES (?, ?, ?)",
            )
            .bind(tenant.as_str())
            .bind(m.id.to_string())
            .bind(tag)
            .execute(&self.0)
            .await
            .unwrap();
        }
    }
}

/// No ids, no query: a closed pool would fail any statement.
#[tokio::test]
async fn get_many_of_no_ids_does_not_touch_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
        .await
        .unwrap();
    let model = SqliteMemoryReadModel::new(pool.clone(), cases::cipher());
    pool.close().await;
    let t = TenantId::parse("t1").unwrap();
    assert!(model.get_many(&t, &[MemoryId::new()]).await.is_err());
    assert!(model.get_many(&t, &[]).await.unwrap().is_empty());
}

/// Whether `needle` is anywhere in the database file or its write-ahead
/// log, byte for byte.
fn on_disk(db: &Path, needle: &str) -> bool {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    [db.to_path_buf(), PathBuf::from(wal)].iter().any(|file| {
        std::fs::read(file).is_ok_and(|bytes| {
            bytes
                .windows(needle.len())
                .any(|window| window == needle.as_bytes())
        })
    })
}

/// The subject's content, tags and session never reach the file in clear,
/// not even before an erasure: the row holds a sealed blob and tag tokens.
/// The same scan finds the canary once it is written in clear to another
/// table of the file, so it does read what SQLite wrote.
#[tokio::test]
async fn subject_data_is_never_in_the_file_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let pool = mnemo_event_store::sqlite::connect(&db).await.unwrap();
    let model = SqliteMemoryReadModel::new(pool.clone(), cases::cipher());
    let t = TenantId::parse("t1").unwrap();
    let canary = cases::canary();
    let tag = format!("{canary}-tag");
    for n in 0..3 {
        let mut m = memory(
            "s1",
            MemoryKind::Fact,
            &format!("lives at {canary} street {n}"),
            &[&tag, "home"],
        );
        m.session = Some(SessionId::parse(format!("{canary}-session")).unwrap());
        model.upsert(&t, &m).await.unwrap();
        m.version = 2;
        m.content = SubjectText::new(format!("moved to {canary} avenue {n}"));
        model.upsert(&t, &m).await.unwrap();
    }
    let s1 = SubjectId::parse("s1").unwrap();
    let filter = MemoryFilter {
        tags: vec![tag],
        limit: 10,
        ..Default::default()
    };
    let listed = model.list(&t, &s1, &filter).await.unwrap();
    assert_eq!(listed.len(), 3, "the rows read back");
    assert!(listed[0].content.as_text().unwrap().contains(&canary));

    assert!(!on_disk(&db, &canary), "subject data in the file in clear");

    sqlx::query("CREATE TABLE scan_control (x TEXT)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO scan_control (x) VALUES (?)")
        .bind(format!("in clear: {canary}"))
        .execute(&pool)
        .await
        .unwrap();
    assert!(on_disk(&db, &canary), "the scan sees what SQLite writes");
}

/// A key store that counts what it is asked.
#[derive(Default)]
struct CountingKeys {
    inner: mnemo_crypto::MemorySubjectKeyStore,
    lookups: std::sync::atomic::AtomicUsize,
}

impl CountingKeys {
    fn lookups(&self) -> usize {
        self.lookups.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn count(&self) {
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait]
impl mnemo_crypto::SubjectKeyStore for CountingKeys {
    async fn get_or_create(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<mnemo_crypto::KeyRef, mnemo_crypto::CryptoError> {
        self.count();
        self.inner.get_or_create(tenant, subject).await
    }

    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Result<Option<std::sync::Arc<mnemo_crypto::DataKey>>, mnemo_crypto::CryptoError> {
        self.count();
        self.inner.get(tenant, subject, key_id).await
    }

    async fn destroy(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u32, mnemo_crypto::CryptoError> {
        self.inner.destroy(tenant, subject).await
    }

    async fn live_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<u32>, mnemo_crypto::CryptoError> {
        self.count();
        self.inner.live_generation(tenant, subject).await
    }
}

/// Hydrating 40 search hits asks the key store once, not once per row:
/// the cipher caches the key, and the adapter opens every row through the
/// one cipher it was given. (The opening is the same code on PostgreSQL.)
#[tokio::test]
async fn a_page_of_one_subject_costs_one_key_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("m.db"))
        .await
        .unwrap();
    let keys = std::sync::Arc::new(CountingKeys::default());
    let writer = SqliteMemoryReadModel::new(
        pool.clone(),
        std::sync::Arc::new(mnemo_crypto::SubjectCipher::new(keys.clone())),
    );
    let t = TenantId::parse("t1").unwrap();
    let mut ids = Vec::new();
    for n in 0..40 {
        let m = memory("s1", MemoryKind::Fact, &format!("fact {n}"), &["x"]);
        writer.upsert(&t, &m).await.unwrap();
        ids.push(m.id);
    }
    // A reader with a cold cache, as after a restart.
    let reader = SqliteMemoryReadModel::new(
        pool,
        std::sync::Arc::new(mnemo_crypto::SubjectCipher::new(keys.clone())),
    );
    let before = keys.lookups();
    assert_eq!(reader.get_many(&t, &ids).await.unwrap().len(), 40);
    assert_eq!(keys.lookups() - before, 1, "one lookup for 40 rows");
    let s1 = SubjectId::parse("s1").unwrap();
    let page = MemoryFilter {
        limit: 40,
        ..Default::default()
    };
    assert_eq!(reader.list(&t, &s1, &page).await.unwrap().len(), 40);
    assert_eq!(keys.lookups() - before, 1, "and none more for a page");
}
