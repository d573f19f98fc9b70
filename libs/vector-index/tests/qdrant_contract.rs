//! The VectorIndex contract on a real Qdrant server.
//!
//! Runs when `TEST_QDRANT_URL` names a server's gRPC endpoint (e.g.
//! `TEST_QDRANT_URL=http://localhost:6334`; `TEST_QDRANT_API_KEY` if it needs
//! one); otherwise every case prints a skip line and passes. Each case works
//! in its own collection (a unique prefix) and deletes it when it ends,
//! passed or failed.
#![cfg(feature = "qdrant")]

use std::sync::Arc;

use mnemo_vector_index::{
    vector_index_contract_tests, QdrantSettings, QdrantVectorIndex, VectorIndex,
};

const DIMENSION: usize = 16;
const SPACE: &str = "contract-space__16";

fn server_url() -> Result<String, String> {
    match std::env::var("TEST_QDRANT_URL") {
        Ok(url) if !url.trim().is_empty() => Ok(url),
        _ => Err("TEST_QDRANT_URL is not set; no Qdrant server to test against".into()),
    }
}

/// One case's collection; deleted on drop (after a panic too).
struct TestCollection {
    settings: QdrantSettings,
}

impl TestCollection {
    fn new() -> Self {
        let mut settings = QdrantSettings::new(server_url().expect("checked by run_if"));
        settings.api_key = std::env::var("TEST_QDRANT_API_KEY")
            .ok()
            .map(secrecy::SecretString::from);
        settings.collection_prefix = format!("mnemo-test-{}-", uuid::Uuid::new_v4().simple());
        Self { settings }
    }
}

impl Drop for TestCollection {
    fn drop(&mut self) {
        // Drop cannot await and may run inside the test's runtime: clean up
        // on a thread of its own with a runtime of its own.
        let settings = self.settings.clone();
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cleanup runtime");
            runtime.block_on(async {
                match QdrantVectorIndex::connect(&settings, SPACE, DIMENSION).await {
                    Ok(index) => {
                        if let Err(e) = index.drop_collection().await {
                            eprintln!("could not delete {}: {e}", index.collection());
                        }
                    }
                    Err(e) => eprintln!("could not reach the test collection to delete it: {e}"),
                }
            });
        });
        let _ = cleanup.join();
    }
}

async fn fresh_collection() -> TestCollection {
    TestCollection::new()
}

async fn connect(collection: Arc<TestCollection>) -> Arc<dyn VectorIndex> {
    Arc::new(
        QdrantVectorIndex::connect(&collection.settings, SPACE, DIMENSION)
            .await
            .expect("connect to TEST_QDRANT_URL"),
    )
}

vector_index_contract_tests!(setup: fresh_collection(), open: connect, run_if: server_url().map(|_| ()));

/// What only a server adapter shows: a second client of the same collection
/// sees the first one's writes at once (several retriever replicas share a
/// collection), and reconnecting with another dimension is refused.
#[tokio::test]
async fn replicas_share_a_collection_and_a_dimension_change_is_refused() {
    if let Err(reason) = server_url() {
        mnemo_vector_index::testsuite::report_skip(
            "replicas_share_a_collection_and_a_dimension_change_is_refused",
            &reason,
        );
        return;
    }
    use mnemo_vector_index::testsuite::{axis, keyword, point, subject, tenant};
    let collection = TestCollection::new();
    let first = QdrantVectorIndex::connect(&collection.settings, SPACE, DIMENSION)
        .await
        .unwrap();
    let second = QdrantVectorIndex::connect(&collection.settings, SPACE, DIMENSION)
        .await
        .unwrap();
    first.ping().await.unwrap();
    let t = tenant("t1");
    let memory = point(&t, &subject("s1"), "plays the oboe", axis(DIMENSION, 0));
    first.upsert(&t, vec![memory.clone()]).await.unwrap();
    let hits = second.search(&t, &keyword("oboe")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, memory.id);
    let error = QdrantVectorIndex::connect(&collection.settings, SPACE, DIMENSION * 2)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "dimension_mismatch", "{error}");
}
