//! The usage store cases, run on the SQLite and PostgreSQL stores, and the
//! access-signal handler in front of them.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use mnemo_domain::{MemoryId, SubjectId, TenantId};
use mnemo_forgetter::usage::UsageStore;

fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).unwrap()
}

fn subject(name: &str) -> SubjectId {
    SubjectId::parse(name).unwrap()
}

/// Microsecond precision, what both stores keep.
fn micros(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_micros(at.timestamp_micros()).unwrap()
}

async fn counts_accesses_and_keeps_the_latest_time(store: &dyn UsageStore) {
    let (t, s) = (tenant("t1"), subject("s1"));
    let (a, b) = (MemoryId::new(), MemoryId::new());
    let early = micros(Utc::now() - Duration::hours(2));
    let late = micros(Utc::now());
    store.record(&t, &s, &[a, b], late).await.unwrap();
    // A signal that arrives late with an older time counts, but does not
    // move the last access back.
    store.record(&t, &s, &[a], early).await.unwrap();
    let usage = store.get(&t, &s).await.unwrap();
    assert_eq!(usage.len(), 2);
    assert_eq!(usage[&a].accesses, 2);
    assert_eq!(usage[&a].last_accessed_at, late);
    assert_eq!(usage[&b].accesses, 1);
}

/// One signal naming a memory twice counts it twice (the statement holds
/// each memory once, with its count), and a signal of more hits than one
/// SQLite statement takes (150 rows) counts every one.
async fn a_signal_counts_repeats_and_every_hit(store: &dyn UsageStore) {
    let (t, s) = (tenant("t1"), subject("s1"));
    let now = micros(Utc::now());
    let many: Vec<MemoryId> = (0..160).map(|_| MemoryId::new()).collect();
    let mut ids = many.clone();
    ids.push(many[0]);
    ids.push(many[159]);
    ids.push(many[0]);
    store.record(&t, &s, &ids, now).await.unwrap();
    store.record(&t, &s, &[many[1]], now).await.unwrap();
    store.record(&t, &s, &[], now).await.unwrap();
    let usage = store.get(&t, &s).await.unwrap();
    assert_eq!(usage.len(), 160);
    assert_eq!(usage[&many[0]].accesses, 3);
    assert_eq!(usage[&many[159]].accesses, 2);
    assert_eq!(usage[&many[1]].accesses, 2);
    let once = many[2..159].iter().filter(|id| usage[id].accesses == 1);
    assert_eq!(once.count(), 157);
}

async fn usage_is_per_tenant_and_subject(store: &dyn UsageStore) {
    let id = MemoryId::new();
    let now = micros(Utc::now());
    store
        .record(&tenant("t1"), &subject("s1"), &[id], now)
        .await
        .unwrap();
    assert!(store
        .get(&tenant("t2"), &subject("s1"))
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .get(&tenant("t1"), &subject("s2"))
        .await
        .unwrap()
        .is_empty());
    // The same memory id under another tenant is its own row.
    store
        .record(&tenant("t2"), &subject("s1"), &[id], now)
        .await
        .unwrap();
    assert_eq!(
        store.get(&tenant("t1"), &subject("s1")).await.unwrap()[&id].accesses,
        1
    );
}

async fn deleting_a_subject_leaves_the_others(store: &dyn UsageStore) {
    let now = micros(Utc::now());
    let t = tenant("t1");
    store
        .record(&t, &subject("s1"), &[MemoryId::new(), MemoryId::new()], now)
        .await
        .unwrap();
    store
        .record(&t, &subject("s2"), &[MemoryId::new()], now)
        .await
        .unwrap();
    store
        .record(&tenant("t2"), &subject("s1"), &[MemoryId::new()], now)
        .await
        .unwrap();
    assert_eq!(store.delete_subject(&t, &subject("s1")).await.unwrap(), 2);
    assert!(store.get(&t, &subject("s1")).await.unwrap().is_empty());
    assert_eq!(store.get(&t, &subject("s2")).await.unwrap().len(), 1);
    assert_eq!(
        store
            .get(&tenant("t2"), &subject("s1"))
            .await
            .unwrap()
            .len(),
        1
    );
}

macro_rules! usage_cases {
    ($module:ident, $fixture:path) => {
        mod $module {
            #[tokio::test]
            async fn counts_accesses_and_keeps_the_latest_time() {
                let (_guard, store) = $fixture().await;
                super::counts_accesses_and_keeps_the_latest_time(store.as_ref()).await;
            }
            #[tokio::test]
            async fn a_signal_counts_repeats_and_every_hit() {
                let (_guard, store) = $fixture().await;
                super::a_signal_counts_repeats_and_every_hit(store.as_ref()).await;
            }
            #[tokio::test]
            async fn usage_is_per_tenant_and_subject() {
                let (_guard, store) = $fixture().await;
                super::usage_is_per_tenant_and_subject(store.as_ref()).await;
            }
            #[tokio::test]
            async fn deleting_a_subject_leaves_the_others() {
                let (_guard, store) = $fixture().await;
                super::deleting_a_subject_leaves_the_others(store.as_ref()).await;
            }
        }
    };
}

async fn sqlite_store() -> (tempfile::TempDir, Arc<dyn UsageStore>) {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("mnemo.db"))
        .await
        .unwrap();
    (
        dir,
        Arc::new(mnemo_forgetter::usage::SqliteUsageStore::new(pool)),
    )
}

usage_cases!(sqlite, super::sqlite_store);

#[cfg(feature = "postgres")]
async fn postgres_store() -> (mnemo_pg::testsupport::TestDatabase, Arc<dyn UsageStore>) {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let store = mnemo_forgetter::usage::PostgresUsageStore::new(db.tenant_pool());
    (db, Arc::new(store))
}

#[cfg(feature = "postgres")]
usage_cases!(postgres, super::postgres_store);

/// Without a tenant the application role sees no usage rows at all.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_database_hides_usage_without_a_tenant() {
    use sqlx::Connection;
    let (db, store) = postgres_store().await;
    store
        .record(
            &tenant("t1"),
            &subject("s1"),
            &[MemoryId::new()],
            Utc::now(),
        )
        .await
        .unwrap();
    let mut app = sqlx::PgConnection::connect_with(&db.options_as(mnemo_pg::APP_ROLE))
        .await
        .unwrap();
    let visible: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_usage")
        .fetch_one(&mut app)
        .await
        .unwrap();
    assert_eq!(visible, 0);
}

/// An access signal about a subject with no live key (erased, or never
/// seen) is dropped: a search's signal handled after the subject's
/// erasure must not bring a usage row naming it back.
#[tokio::test]
async fn a_signal_about_an_erased_subject_is_dropped() {
    use mnemo_bus::{Delivery, RecordHandler};
    use mnemo_domain::signals::AccessSignal;
    use mnemo_forgetter::usage::AccessSignals;

    let (_dir, usage) = sqlite_store().await;
    let cipher = Arc::new(mnemo_crypto::SubjectCipher::new(Arc::new(
        mnemo_crypto::MemorySubjectKeyStore::new(),
    )));
    let handler = AccessSignals {
        usage: usage.clone(),
        cipher: cipher.clone(),
    };
    let t = TenantId::parse("t1").unwrap();
    let (ann, bob) = (
        SubjectId::parse("ann").unwrap(),
        SubjectId::parse("bob").unwrap(),
    );
    // Ann has a key (something of hers was sealed); Bob never had one.
    cipher.generation(&t, &ann).await.unwrap();
    let memory = MemoryId::new();
    let delivery = |subject: &SubjectId| Delivery {
        topic: "mnemo.access-signals".into(),
        partition: 0,
        offset: 0,
        key: subject.to_string(),
        payload: AccessSignal::new(t.clone(), subject.clone(), vec![memory], Utc::now()).encode(),
        headers: Vec::new(),
    };
    handler.handle_record(&delivery(&ann)).await.unwrap();
    handler.handle_record(&delivery(&bob)).await.unwrap();
    assert_eq!(usage.get(&t, &ann).await.unwrap().len(), 1);
    assert!(usage.get(&t, &bob).await.unwrap().is_empty());

    // Erased: the rows are deleted, and a late signal does not recreate them.
    cipher.destroy(&t, &ann).await.unwrap();
    usage.delete_subject(&t, &ann).await.unwrap();
    handler.handle_record(&delivery(&ann)).await.unwrap();
    assert!(usage.get(&t, &ann).await.unwrap().is_empty());
}
