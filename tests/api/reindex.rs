//! The vector collection follows the embedding model: a model change
//! replays the log into a new collection, `mnemo reindex` builds one beside
//! a running server, and a restart takes it over. Two lexical spaces of
//! different dimensions stand in for two models (each is its own space and
//! collection, exactly as two neural models would be).

use std::path::Path;

use mnemo_domain::{SubjectId, TenantId};
use serde_json::{json, Value};

use crate::helpers::{settings_for, spawn_app_in, TestApp};

const MODEL_A: &[(&str, &str)] = &[("MNEMO_EMBED_DIMENSION", "256")];
const MODEL_B: &[(&str, &str)] = &[("MNEMO_EMBED_DIMENSION", "384")];

fn active(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("vectors/ACTIVE"))
        .unwrap()
        .trim()
        .to_owned()
}

fn collections(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("vectors"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

async fn search(app: &TestApp, token: &str, subject: &str, query: &str) -> Vec<String> {
    let body: Value = app
        .post_json(
            &format!("/v1/subjects/{subject}/search"),
            token,
            json!({"query": query, "k": 10}),
        )
        .await;
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory"]["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until the subject's memories are all searchable: points in the
/// index and rows in the read model (the projection writes both, behind
/// the API).
async fn wait_searchable(app: &TestApp, tenant: &str, subject: &str, count: u64) {
    let token = app.admin(tenant);
    app.wait_for_list(&token, subject, |list| list.len() as u64 >= count)
        .await;
    let tenant = TenantId::parse(tenant).unwrap();
    let subject = SubjectId::parse(subject).unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.index.count(&tenant, Some(&subject)).await.unwrap() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "points never appeared"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_model_change_replays_the_log_into_a_new_collection_before_serving() {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), MODEL_A).await;
    let token = app.admin("acme");
    app.memory(&token, "ana", "Lives in Lisbon near the river")
        .await;
    app.memory(&token, "ana", "Plays the cello every Sunday")
        .await;
    wait_searchable(&app, "acme", "ana", 2).await;
    let first = active(app.dir.path());
    let dir = app.stop().await;

    let app = spawn_app_in(dir, MODEL_B).await;
    // No waiting: the collection is brought up to the log's head before the
    // server answers.
    let found = search(&app, &token, "ana", "cello").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("Plays the cello every Sunday")
    );
    assert_eq!(search(&app, &token, "ana", "Lisbon").await.len(), 2);
    let second = active(app.dir.path());
    assert_ne!(first, second);
    assert!(
        second.starts_with("p2_mnemo_lexical-hash-v1__384"),
        "{second}"
    );
    // The former collection stopped receiving erasures: it is gone.
    assert_eq!(collections(app.dir.path()), vec![second]);
}

#[tokio::test]
async fn reindex_builds_beside_a_running_server_which_takes_it_over_at_restart() {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), MODEL_A).await;
    let token = app.admin("acme");
    app.memory(&token, "bob", "Works as a nurse in Porto").await;
    app.memory(&token, "bob", "Allergic to peanuts").await;
    app.memory(&token, "eve", "Collects vintage postcards")
        .await;
    wait_searchable(&app, "acme", "bob", 2).await;
    wait_searchable(&app, "acme", "eve", 1).await;
    app.erase(&token, "eve").await;
    let serving = active(app.dir.path());

    mnemo_app::reindex::run(&settings_for(app.dir.path(), MODEL_B))
        .await
        .unwrap();
    // The server still serves its own collection and model.
    assert_eq!(active(app.dir.path()), serving);
    assert_eq!(search(&app, &token, "bob", "peanuts").await.len(), 2);
    let built: Vec<String> = collections(app.dir.path())
        .into_iter()
        .filter(|c| *c != serving)
        .collect();
    assert_eq!(built.len(), 1, "{built:?}");
    let marker: Value = serde_json::from_slice(
        &std::fs::read(
            app.dir
                .path()
                .join("vectors")
                .join(&built[0])
                .join("replay.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(marker["complete"], true);

    // Written after the build: the take-over must catch it up.
    app.memory(&token, "bob", "Bought a red bicycle").await;
    wait_searchable(&app, "acme", "bob", 3).await;
    let dir = app.stop().await;

    let app = spawn_app_in(dir, MODEL_B).await;
    assert_eq!(active(app.dir.path()), built[0]);
    assert_eq!(collections(app.dir.path()), vec![built[0].clone()]);
    assert!(!app
        .dir
        .path()
        .join("vectors")
        .join(&built[0])
        .join("replay.json")
        .exists());
    let found = search(&app, &token, "bob", "bicycle").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("Bought a red bicycle")
    );
    assert_eq!(found.len(), 3);
    let acme = TenantId::parse("acme").unwrap();
    let eve = SubjectId::parse("eve").unwrap();
    assert_eq!(app.index.count(&acme, Some(&eve)).await.unwrap(), 0);
    assert_eq!(app.index.count(&acme, None).await.unwrap(), 3);
}

#[tokio::test]
async fn reindex_without_a_server_takes_over_at_once_and_compacts() {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), MODEL_A).await;
    let token = app.admin("acme");
    let id = app.memory(&token, "kim", "Speaks Korean and Dutch").await;
    app.memory(&token, "kim", "Moved to Utrecht in May").await;
    wait_searchable(&app, "acme", "kim", 2).await;
    let response = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/memories/{id}"),
            &token,
            None,
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    let acme = TenantId::parse("acme").unwrap();
    let kim = SubjectId::parse("kim").unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.index.count(&acme, Some(&kim)).await.unwrap() != 1 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let before = active(app.dir.path());
    let dir = app.stop().await;

    // Same model: a fresh copy of the collection, without the deleted point.
    mnemo_app::reindex::run(&settings_for(dir.path(), MODEL_A))
        .await
        .unwrap();
    let after = active(dir.path());
    assert_ne!(after, before);
    assert_eq!(collections(dir.path()), vec![after.clone()]);

    let app = spawn_app_in(dir, MODEL_A).await;
    assert_eq!(active(app.dir.path()), after);
    assert_eq!(app.index.count(&acme, Some(&kim)).await.unwrap(), 1);
    assert_eq!(
        search(&app, &token, "kim", "Utrecht").await,
        vec!["Moved to Utrecht in May"]
    );
}

#[tokio::test]
async fn a_second_server_on_the_same_data_dir_is_refused() {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), MODEL_A).await;
    let error = match mnemo_app::Application::build(settings_for(app.dir.path(), MODEL_A)).await {
        Ok(_) => panic!("a second server started on the same data dir"),
        Err(error) => error.to_string(),
    };
    // Both programs named (the holder wrote its own into the lock file;
    // here it is this test process), and what to do instead.
    assert!(
        error.contains("mnemo serve cannot use the data dir"),
        "{error}"
    );
    assert!(
        error.contains(&format!(
            "mnemo serve (pid {}) is running on it",
            std::process::id()
        )),
        "{error}"
    );
    assert!(error.contains("a data dir of its own"), "{error}");
}

/// The Qdrant server's URL (`TEST_QDRANT_URL`, else the stand-in's) and a
/// collection prefix of the test's own.
async fn qdrant_server() -> (String, String) {
    let url = match std::env::var("TEST_QDRANT_URL") {
        Ok(url) => url,
        Err(_) => format!(
            "http://{}",
            mnemo_vector_index::qdrant_standin::start().await
        ),
    };
    let prefix = format!("mnemo-test-{}-", uuid::Uuid::new_v4().simple());
    (url, prefix)
}

/// With a Qdrant server (here the stand-in over qdrant-edge, the real one
/// when `TEST_QDRANT_URL` is set), a new embedding space is a new
/// collection, filled from the log before the server answers.
#[tokio::test]
async fn a_model_change_fills_a_new_qdrant_collection_from_the_log() {
    let (url, prefix) = qdrant_server().await;
    let with = |dimension: &'static str| {
        vec![
            ("MNEMO_EMBED_DIMENSION", dimension),
            ("MNEMO_QDRANT_URL", url.as_str()),
            ("MNEMO_QDRANT_COLLECTION_PREFIX", prefix.as_str()),
        ]
    };
    let app = spawn_app_in(tempfile::tempdir().unwrap(), &with("256")).await;
    let token = app.admin("acme");
    app.memory(&token, "lou", "Repairs old clocks as a hobby")
        .await;
    app.memory(&token, "lou", "Lives on a houseboat in Utrecht")
        .await;
    wait_searchable(&app, "acme", "lou", 2).await;
    let dir = app.stop().await;

    let app = spawn_app_in(dir, &with("384")).await;
    let found = search(&app, &token, "lou", "clocks").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("Repairs old clocks as a hobby")
    );
    let acme = TenantId::parse("acme").unwrap();
    assert_eq!(app.index.count(&acme, None).await.unwrap(), 2);
    // Nothing of the vectors is in the data dir: they are in Qdrant.
    assert!(!app.dir.path().join("vectors").exists());
}

/// A collection written under an earlier payload layout (named without
/// this version's layout) is not served: its points lack what the filters
/// lead with. The server replays the log into a collection of this layout
/// before it answers, and deletes the former one.
#[tokio::test]
async fn a_collection_of_an_earlier_payload_layout_is_rebuilt_from_the_log() {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), MODEL_A).await;
    let token = app.admin("acme");
    app.memory(&token, "ivy", "Keeps bees on the roof").await;
    app.memory(&token, "ivy", "Sings in a choir on Thursdays")
        .await;
    wait_searchable(&app, "acme", "ivy", 2).await;
    let served = active(app.dir.path());
    let dir = app.stop().await;
    // What an earlier version named it: the space alone.
    let former = mnemo_vector_index::collections::base_of(&served)
        .strip_prefix(&format!("p{}_", mnemo_vector_index::payload::LAYOUT))
        .unwrap()
        .to_owned();
    let vectors = dir.path().join("vectors");
    std::fs::rename(vectors.join(&served), vectors.join(&former)).unwrap();
    std::fs::write(vectors.join("ACTIVE"), &former).unwrap();

    let app = spawn_app_in(dir, MODEL_A).await;
    assert_eq!(search(&app, &token, "ivy", "bees").await.len(), 2);
    let rebuilt = active(app.dir.path());
    assert_eq!(
        mnemo_vector_index::collections::base_of(&rebuilt),
        mnemo_vector_index::payload::collection_name(&former)
    );
    assert_eq!(collections(app.dir.path()), vec![rebuilt]);
}

/// On a Qdrant server, the space's collection of an earlier payload layout
/// is deleted once this layout's is filled: erasures no longer reach it.
#[tokio::test]
async fn the_qdrant_collection_of_an_earlier_payload_layout_is_deleted() {
    let (url, prefix) = qdrant_server().await;
    let env = vec![
        ("MNEMO_EMBED_DIMENSION", "256"),
        ("MNEMO_QDRANT_URL", url.as_str()),
        ("MNEMO_QDRANT_COLLECTION_PREFIX", prefix.as_str()),
    ];
    let mut qdrant = mnemo_vector_index::QdrantSettings::new(url.clone());
    qdrant.collection_prefix = prefix.clone();
    // A collection as an earlier version named it, holding a point.
    let space = "mnemo_lexical-hash-v1__256";
    mnemo_vector_index::QdrantVectorIndex::connect(&qdrant, space, 256)
        .await
        .unwrap();

    let app = spawn_app_in(tempfile::tempdir().unwrap(), &env).await;
    let token = app.admin("acme");
    app.memory(&token, "kai", "Restores old sailing boats")
        .await;
    wait_searchable(&app, "acme", "kai", 1).await;
    let spaces = mnemo_vector_index::QdrantVectorIndex::spaces(&qdrant)
        .await
        .unwrap();
    assert_eq!(
        spaces,
        vec![mnemo_vector_index::payload::collection_name(space)]
    );
    let dir = app.stop().await;
    drop(dir);
    for space in spaces {
        mnemo_vector_index::QdrantVectorIndex::drop_space(&qdrant, &space)
            .await
            .unwrap();
    }
}
