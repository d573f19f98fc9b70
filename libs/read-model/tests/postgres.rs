//! The read model cases on PostgreSQL, what the database enforces on the
//! table whatever the adapter does, and what reaches the relation files.
#![cfg(feature = "postgres")]

mod cases;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cases::{memory, Fixture, LegacyRows};
use mnemo_domain::{Memory, MemoryId, MemoryKind, SessionId, SubjectId, SubjectText, TenantId};
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::{TenantPool, APP_ROLE, SYSTEM_ROLE};
use mnemo_read_model::postgres::PostgresMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use sqlx::types::Json;
use sqlx::{Connection, PgConnection};

async fn model() -> (TestDatabase, Fixture) {
    let db = TestDatabase::new().await;
    let cipher = cases::cipher();
    let fixture = Fixture {
        model: Box::new(PostgresMemoryReadModel::new(
            db.tenant_pool(),
            db.system_pool(),
            cipher.clone(),
        )),
        cipher,
        legacy: Box::new(Legacy(db.tenant_pool())),
    };
    (db, fixture)
}

read_model_cases!(model);

/// Rows as the read model wrote them before `0008_sealed_read_model.sql`.
struct Legacy(TenantPool);

#[async_trait]
impl LegacyRows for Legacy {
    async fn insert_legacy(&self, tenant: &TenantId, m: &Memory) {
        let mut tx = self.0.begin(tenant).await.unwrap();
        sqlx::query(
            "INSERT INTO memories (tenant_id, memory_id, subject_id, kind, content, tags, confidence, \
             importance, state, version, provenance, session_id, agent_id, reinforcements, superseded_by, \
             created_at, updated_at, relations) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
        )
        .bind(tenant.as_str())
        .bind(m.id.to_string())
        .bind(m.subject.as_str())
        .bind(m.kind.as_str())
        .bind(m.content.as_text().unwrap())
        .bind(&m.tags)
        .bind(m.confidence)
        .bind(m.importance)
        .bind(m.state.as_str())
        .bind(m.version as i64)
        .bind(Json(&m.provenance))
        .bind(m.session.as_ref().map(SessionId::as_str))
        .bind(m.agent.as_ref().map(|a| a.as_str()))
        .bind(i64::from(m.reinforcements))
        .bind(m.superseded_by.map(|id| id.to_string()))
        .bind(m.created_at)
        .bind(m.updated_at)
        .bind(Json(&m.relations))
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
}

fn adapter(db: &TestDatabase) -> PostgresMemoryReadModel {
    PostgresMemoryReadModel::new(db.tenant_pool(), db.system_pool(), cases::cipher())
}

/// No ids, no transaction: a closed pool would fail any statement.
#[tokio::test]
async fn get_many_of_no_ids_does_not_touch_the_database() {
    let db = TestDatabase::new().await;
    let model = adapter(&db);
    db.tenant_pool().close().await;
    let t = TenantId::parse("t1").unwrap();
    assert!(model.get_many(&t, &[MemoryId::new()]).await.is_err());
    assert!(model.get_many(&t, &[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn rows_are_visible_to_their_tenant_only_and_content_never_to_the_system_role() {
    let db = TestDatabase::new().await;
    let model = adapter(&db);
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
    for column in ["content", "sealed", "tag_tokens"] {
        let denied = sqlx::query(&format!("SELECT {column} FROM memories"))
            .fetch_all(&mut system)
            .await;
        assert!(
            denied
                .unwrap_err()
                .to_string()
                .contains("permission denied"),
            "{column}"
        );
    }
}

/// The files of the read model's relations: the table, its TOAST table
/// and every index of both, each with its extra 1 GB segments.
async fn relation_files(admin: &mut PgConnection) -> Vec<PathBuf> {
    let data_dir: String = sqlx::query_scalar("SHOW data_directory")
        .fetch_one(&mut *admin)
        .await
        .unwrap();
    let paths: Vec<String> = sqlx::query_scalar(
        "WITH tables AS ( \
             SELECT oid FROM pg_class WHERE oid = 'public.memories'::regclass \
             UNION SELECT reltoastrelid FROM pg_class \
                 WHERE oid = 'public.memories'::regclass AND reltoastrelid <> 0) \
         SELECT pg_relation_filepath(oid) FROM ( \
             SELECT oid FROM tables \
             UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM tables)) r",
    )
    .fetch_all(&mut *admin)
    .await
    .unwrap();
    let mut files = Vec::new();
    for path in paths {
        let main = Path::new(&data_dir).join(path);
        for segment in 1.. {
            let mut name = main.as_os_str().to_owned();
            name.push(format!(".{segment}"));
            if !Path::new(&name).exists() {
                break;
            }
            files.push(PathBuf::from(name));
        }
        files.push(main);
    }
    files
}

/// Whether `needle` is in any of `files`, byte for byte; `None` when a
/// file cannot be read (the server is elsewhere, or the test does not run
/// as a user that may read its data directory).
fn in_files(files: &[PathBuf], needle: &str) -> Option<bool> {
    let mut found = false;
    for file in files {
        match std::fs::read(file) {
            Ok(bytes) => {
                found |= bytes
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
            }
            Err(error) => {
                eprintln!(
                    "skipped: cannot read {} ({error}); run as a user that may read \
                     the server's data directory",
                    file.display()
                );
                return None;
            }
        }
    }
    Some(found)
}

async fn checkpoint(admin: &mut PgConnection) {
    sqlx::query("CHECKPOINT")
        .execute(&mut *admin)
        .await
        .unwrap();
}

/// The subject's content, tags and session never reach the relation files
/// in clear: not while the rows live, and not in the dead tuples an update
/// and the erasure's DELETE leave behind (which the application role cannot
/// vacuum, and vacuum would not zero). A legacy row written in clear is
/// found by the same scan, so it reads the files PostgreSQL wrote.
#[tokio::test]
async fn subject_data_is_never_in_the_relation_files_in_clear() {
    let db = TestDatabase::new().await;
    let model = adapter(&db);
    let mut admin = PgConnection::connect_with(&db.admin_options())
        .await
        .unwrap();
    let t = TenantId::parse("t1").unwrap();
    let s1 = SubjectId::parse("s1").unwrap();
    let canary = cases::canary();
    for n in 0..3 {
        // One content long enough to be moved out of line, to TOAST.
        let content = match n {
            0 => format!("lives at {canary} ").repeat(300),
            _ => format!("lives at {canary} street {n}"),
        };
        let mut m = memory(
            "s1",
            MemoryKind::Fact,
            &content,
            &[&format!("{canary}-tag"), "home"],
        );
        m.session = Some(SessionId::parse(format!("{canary}-session")).unwrap());
        model.upsert(&t, &m).await.unwrap();
        m.version = 2;
        m.content = SubjectText::new(format!("moved to {canary} avenue {n}"));
        model.upsert(&t, &m).await.unwrap();
    }
    assert_eq!(
        model
            .list(&t, &s1, &cases::all())
            .await
            .unwrap()
            .iter()
            .filter(|m| m.content.as_text().unwrap().contains(&canary))
            .count(),
        3,
        "the rows read back"
    );

    checkpoint(&mut admin).await;
    let files = relation_files(&mut admin).await;
    let Some(found) = in_files(&files, &canary) else {
        return;
    };
    assert!(!found, "subject data in the relation files in clear");

    assert_eq!(model.delete_subject(&t, &s1).await.unwrap(), 3);
    checkpoint(&mut admin).await;
    assert_eq!(
        in_files(&files, &canary),
        Some(false),
        "subject data in the dead tuples in clear"
    );

    let legacy = memory("s2", MemoryKind::Fact, &format!("in clear: {canary}"), &[]);
    Legacy(db.tenant_pool()).insert_legacy(&t, &legacy).await;
    checkpoint(&mut admin).await;
    assert_eq!(
        in_files(&relation_files(&mut admin).await, &canary),
        Some(true),
        "the scan sees what PostgreSQL writes"
    );
}
