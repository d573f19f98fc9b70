//! `mnemo verify-erasure` on PostgreSQL (the log, keys, read model and
//! pipeline state in the database; the in-process bus and qdrant-edge in
//! the data dir), run in process on what the server left: it finds the
//! subject before the erasure, in the tables and in PostgreSQL's files
//! too, and nothing readable after it.

use std::path::PathBuf;

use base64::Engine as _;
use mnemo_app::verify_erasure::report::{Check, Outcome, Report};
use mnemo_app::verify_erasure::{verify, VerifyOptions};
use mnemo_domain::SubjectId;
use serde_json::json;

use crate::helpers::{settings_for, spawn_app_in, spawn_app_with};

const MESSAGE_CANARY: &str = "pg-canary-message-6617";
const MEMORY_CANARY: &str = "pg-canary-memory-2290";

fn check<'a>(report: &'a Report, store: &str, name: &str) -> &'a Check {
    report
        .checks
        .iter()
        .find(|c| c.store == store && c.check == name)
        .unwrap_or_else(|| panic!("no check {store} / {name}: {}", report.to_text()))
}

fn found(report: &Report, store: &str, name: &str) -> u64 {
    let check = check(report, store, name);
    assert_ne!(check.outcome, Outcome::Failed, "{}", report.to_text());
    check.found
}

/// PostgreSQL's data directory when this process can read it (a local
/// server, tests run as its owner or root).
async fn readable_data_directory(db: &mnemo_pg::testsupport::TestDatabase) -> Option<PathBuf> {
    let superuser = db.raw_pool("postgres").await;
    let dir: String = sqlx::query_scalar("SHOW data_directory")
        .fetch_one(&superuser)
        .await
        .ok()?;
    let dir = PathBuf::from(dir);
    std::fs::read_dir(dir.join("base")).ok().map(|_| dir)
}

#[tokio::test]
async fn verify_erasure_reads_postgresql_before_and_after_an_erasure() {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let url = db.url_as(mnemo_pg::APP_ROLE);
    // The superuser as the owner's login: it may CHECKPOINT before the
    // files are scanned.
    let owner = db.url_as("postgres");
    let key = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
    let env = [
        ("MNEMO_DATABASE_URL", url.as_str()),
        ("MNEMO_DATABASE_OWNER_URL", owner.as_str()),
        ("MNEMO_MASTER_KEY", key.as_str()),
    ];
    let app = spawn_app_with(&env).await;
    let token = app.admin("acme");
    app.post_messages(
        &token,
        "pg-subject",
        json!([{"role": "user", "id": "m1", "content": format!("keep {MESSAGE_CANARY} safe")}]),
    )
    .await;
    app.memory(&token, "pg-subject", &format!("Note {MEMORY_CANARY}"))
        .await;
    app.wait_for_list(&token, "pg-subject", |m| {
        m.iter()
            .any(|m| m["content"].as_str().unwrap().contains(MEMORY_CANARY))
    })
    .await;
    let dir = app.stop().await;

    let settings = settings_for(dir.path(), &env);
    let pg_data_dir = readable_data_directory(&db).await;
    let options = VerifyOptions {
        subject: SubjectId::parse("pg-subject").unwrap(),
        tenant: None,
        canaries: vec![MESSAGE_CANARY.to_owned(), MEMORY_CANARY.to_owned()],
        pg_data_dir: pg_data_dir.clone(),
    };
    let before = verify(&settings, &options).await.unwrap();
    assert_eq!(before.tenants, ["acme"]);
    assert_eq!(before.exit_code(), 1, "{}", before.to_text());
    assert_eq!(found(&before, "subject_keys", "live data key"), 1);
    assert!(found(&before, "event_log", "events that open to readable text") >= 2);
    assert!(found(&before, "event_log", "canary in opened event text") >= 2);
    assert!(found(&before, "memory_read_model", "rows of the subject") >= 1);
    assert!(found(&before, "vector_index", "points of the subject") >= 1);
    assert!(found(&before, "bus", "records that open to readable text") >= 2);
    // The read model is sealed: PostgreSQL's rows and files hold no canary
    // in clear even before the erasure (the checks ran and found nothing).
    let rows = check(&before, "postgres", "canary in table rows");
    assert_eq!(rows.outcome, Outcome::Clear, "{}", before.to_text());
    if pg_data_dir.is_some() {
        let files = check(
            &before,
            "postgres_files",
            "canary bytes in PostgreSQL's files",
        );
        assert_eq!(files.outcome, Outcome::Clear, "{}", before.to_text());
        assert!(
            files
                .note
                .as_deref()
                .unwrap()
                .starts_with("CHECKPOINT run as"),
            "{}",
            before.to_text()
        );
    }
    assert!(
        !before.to_text().contains(MEMORY_CANARY) && !before.to_text().contains(MESSAGE_CANARY),
        "canaries are named by index only"
    );

    let app = spawn_app_in(dir, &env).await;
    let token = app.admin("acme");
    app.erase(&token, "pg-subject").await;
    let dir = app.stop().await;

    let tables_only = VerifyOptions {
        pg_data_dir: None,
        ..options.clone()
    };
    let after = verify(&settings, &tables_only).await.unwrap();
    assert_eq!(after.exit_code(), 0, "{}", after.to_text());
    assert_eq!(found(&after, "subject_keys", "live data key"), 0);
    assert_eq!(
        found(&after, "event_log", "events that open to readable text"),
        0
    );
    assert_eq!(found(&after, "memory_read_model", "rows of the subject"), 0);
    assert_eq!(
        found(&after, "consolidation_buffer", "rows of the subject"),
        0
    );
    assert_eq!(found(&after, "vector_index", "points of the subject"), 0);
    assert_eq!(
        found(&after, "bus", "records that open to readable text"),
        0
    );
    assert_eq!(found(&after, "postgres", "canary in table rows"), 0);
    if pg_data_dir.is_some() {
        // Deleted rows stay in the table files until VACUUM: the scan says
        // what is there, whatever it is.
        let with_files = verify(&settings, &options).await.unwrap();
        let files = check(
            &with_files,
            "postgres_files",
            "canary bytes in PostgreSQL's files",
        );
        assert_ne!(files.outcome, Outcome::Failed, "{}", with_files.to_text());
    }
    drop(dir);
}

/// The scale-out stores: Kafka (librdkafka's mock cluster) read from the
/// beginning by a group of the command's own, and every embedding space's
/// collection on a Qdrant endpoint (the stand-in, or `TEST_QDRANT_URL`).
#[tokio::test]
async fn verify_erasure_reads_kafka_and_qdrant() {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let url = db.url_as(mnemo_pg::APP_ROLE);
    let kafka = mnemo_bus::kafka::dev::DevKafka::start(0, 2).unwrap();
    let brokers = kafka.bootstrap_servers();
    let qdrant = match std::env::var("TEST_QDRANT_URL") {
        Ok(url) => url,
        Err(_) => format!(
            "http://{}",
            mnemo_vector_index::qdrant_standin::start().await
        ),
    };
    let prefix = format!("verify-{}-", uuid::Uuid::new_v4().simple());
    let key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    let env = [
        ("MNEMO_DATABASE_URL", url.as_str()),
        ("MNEMO_MASTER_KEY", key.as_str()),
        ("MNEMO_KAFKA_BROKERS", brokers.as_str()),
        ("MNEMO_QDRANT_URL", qdrant.as_str()),
        ("MNEMO_QDRANT_COLLECTION_PREFIX", prefix.as_str()),
    ];
    let app = spawn_app_with(&env).await;
    let token = app.admin("acme");
    app.memory(&token, "kq-subject", &format!("Note {MEMORY_CANARY}"))
        .await;
    app.wait_for_list(&token, "kq-subject", |m| m.len() == 1)
        .await;
    let dir = app.stop().await;

    let settings = settings_for(dir.path(), &env);
    let options = VerifyOptions {
        subject: SubjectId::parse("kq-subject").unwrap(),
        tenant: Some(mnemo_domain::TenantId::parse("acme").unwrap()),
        canaries: vec![MEMORY_CANARY.to_owned()],
        pg_data_dir: None,
    };
    let before = verify(&settings, &options).await.unwrap();
    assert_eq!(before.exit_code(), 1, "{}", before.to_text());
    let records = check(&before, "bus", "records of the subject");
    assert_eq!(records.locations[0], "Kafka", "{}", before.to_text());
    assert!(found(&before, "bus", "records that open to readable text") >= 1);
    assert!(found(&before, "bus", "canary in opened record text") >= 1);
    let points = check(&before, "vector_index", "points of the subject");
    assert_eq!(points.found, 1, "{}", before.to_text());
    assert!(
        points.locations[0].starts_with(&prefix),
        "{}",
        before.to_text()
    );

    let app = spawn_app_in(dir, &env).await;
    let token = app.admin("acme");
    app.erase(&token, "kq-subject").await;
    let _dir = app.stop().await;
    let after = verify(&settings, &options).await.unwrap();
    assert_eq!(after.exit_code(), 0, "{}", after.to_text());
    assert!(check(&after, "bus", "records of the subject").found >= 2);
    assert_eq!(
        found(&after, "bus", "records that open to readable text"),
        0
    );
    assert_eq!(found(&after, "vector_index", "points of the subject"), 0);

    // Brokers that do not answer are no "nothing found".
    drop(kafka);
    let unreachable = verify(&settings, &options).await.unwrap();
    assert_eq!(unreachable.exit_code(), 2, "{}", unreachable.to_text());
    let bus = check(&unreachable, "bus", "records of the subject");
    assert_eq!(bus.outcome, Outcome::Failed);
    // librdkafka's transport error, or no partition within the wait.
    assert!(bus.note.is_some(), "{}", unreachable.to_text());
}

/// The raw check of the bus: every record of every Kafka topic read from
/// the beginning, its key, payload and headers scanned as bytes for the
/// canaries and their token forms. The subject's own records hold them
/// sealed only (nothing found, while the opened text does hold them);
/// records planted with a canary in the key, the payload or a header, or
/// with a canary's token, are each found by topic, partition and offset.
#[tokio::test]
async fn verify_erasure_scans_the_bytes_of_every_kafka_record() {
    use mnemo_bus::{Bus as _, OutgoingRecord};

    const TAG_CANARY: &str = "raw-canary-tag-3391";
    const PLANTED: &str = "raw-planted-canary-7702";
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let url = db.url_as(mnemo_pg::APP_ROLE);
    let kafka = mnemo_bus::kafka::dev::DevKafka::start(0, 2).unwrap();
    let brokers = kafka.bootstrap_servers();
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let env = [
        ("MNEMO_DATABASE_URL", url.as_str()),
        ("MNEMO_MASTER_KEY", key.as_str()),
        ("MNEMO_KAFKA_BROKERS", brokers.as_str()),
    ];
    let app = spawn_app_with(&env).await;
    let token = app.admin("acme");
    let created = app
        .create_memory(
            &token,
            "raw-subject",
            json!({"content": format!("Note {MEMORY_CANARY}"), "kind": "fact",
                   "tags": [TAG_CANARY]}),
        )
        .await;
    assert_eq!(created.status(), 201);
    app.wait_for_list(&token, "raw-subject", |m| m.len() == 1)
        .await;
    let dir = app.stop().await;

    let settings = settings_for(dir.path(), &env);
    let options = VerifyOptions {
        subject: SubjectId::parse("raw-subject").unwrap(),
        tenant: Some(mnemo_domain::TenantId::parse("acme").unwrap()),
        canaries: vec![
            MEMORY_CANARY.to_owned(),
            TAG_CANARY.to_owned(),
            PLANTED.to_owned(),
        ],
        pg_data_dir: None,
    };
    const RAW: &str = "canary bytes in every record";
    let before = verify(&settings, &options).await.unwrap();
    // The record holds the canaries, sealed: it opens to the content's and
    // the tag's, and its bytes hold none (nor any token of them).
    let opened = check(&before, "bus", "canary in opened record text");
    assert_eq!(
        opened.locations,
        ["canary #1 in 1", "canary #2 in 1"],
        "{}",
        before.to_text()
    );
    let raw = check(&before, "bus", RAW);
    assert_eq!(raw.outcome, Outcome::Clear, "{}", before.to_text());
    assert!(raw.locations.is_empty(), "{}", before.to_text());
    let note = raw.note.as_deref().unwrap();
    assert!(
        note.contains("3 canaries and 9 token form(s)")
            && note.contains("tenant acme: 9 token form(s) under the live key"),
        "{}",
        before.to_text()
    );
    // The memory's creation: what the raw scan read.
    let records: u64 = note.split(' ').next().unwrap().parse().unwrap();
    assert!(records >= 1, "{}", before.to_text());

    // The tag's token, as the read model stores it.
    let (_log, stores) = mnemo_app::stores::open_log(&settings).await.unwrap();
    let tag_token = stores
        .cipher
        .live_token(
            &mnemo_domain::TenantId::parse("acme").unwrap(),
            &SubjectId::parse("raw-subject").unwrap(),
            mnemo_crypto::TokenPurpose::Tag,
            TAG_CANARY,
        )
        .await
        .unwrap()
        .unwrap();
    stores.close().await;
    let bus = mnemo_bus::kafka::KafkaBus::new(mnemo_bus::kafka::KafkaConfig::new(brokers.clone()))
        .unwrap();
    let record = |key: &str, payload: &str, header: &str| OutgoingRecord {
        key: key.to_owned(),
        payload: payload.as_bytes().to_vec(),
        headers: vec![("note".to_owned(), header.to_owned())],
    };
    let upper = PLANTED.to_uppercase();
    bus.publish(
        mnemo_bus::topics::DEAD_LETTERS,
        vec![
            record(&format!("acme/{upper}"), "{}", "-"),
            record("acme/other", &format!("{{\"error\": \"{upper}\"}}"), "-"),
            record("acme/other", "{}", &format!("x{PLANTED}x")),
            record("acme/other", &format!("[\"{tag_token}\"]"), "-"),
        ],
    )
    .await
    .unwrap();
    drop(bus);

    let after = verify(&settings, &options).await.unwrap();
    assert_eq!(after.exit_code(), 1, "{}", after.to_text());
    let raw = check(&after, "bus", RAW);
    assert_eq!(raw.outcome, Outcome::Found, "{}", after.to_text());
    assert_eq!(raw.found, 4, "{}", after.to_text());
    let mut parts: Vec<&str> = raw
        .locations
        .iter()
        .map(|location| {
            assert!(
                location.starts_with("mnemo.dead-letters partition ")
                    && location.contains(" offset "),
                "{location}"
            );
            location.split_once(": ").unwrap().1
        })
        .collect();
    parts.sort();
    assert_eq!(
        parts,
        [
            "canary #2's token as a tag (tenant acme) ×1 in the payload",
            "canary #3 ×1 in the headers",
            "canary #3 ×1 in the key",
            "canary #3 ×1 in the payload",
        ],
        "{}",
        after.to_text()
    );
    assert!(
        !after.to_text().to_lowercase().contains(PLANTED) && !after.to_text().contains(&tag_token),
        "canaries and tokens are named, never printed"
    );
    drop(dir);
}
