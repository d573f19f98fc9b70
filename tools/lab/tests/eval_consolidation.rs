//! `mnemo eval consolidation` end to end: a small conversation set in the
//! LoCoMo shape, written here, replayed through LLM consolidation against
//! `mnemo dev llm` served in process on a random port, with the lexical
//! embedder. The report's numbers must agree with each other.

use std::collections::HashMap;
use std::net::TcpListener;

use mnemo_config::Overrides;
use mnemo_lab::eval_consolidation::{run, ConsolidationArgs, BATCH_SIZE};
use serde_json::{json, Value};

const TOPICS: [&str; 6] = [
    "adopted a golden retriever puppy called Biscuit from the shelter",
    "started pottery classes at the community studio downtown",
    "moved into a small apartment near the botanical garden",
    "finished reading a long novel about lighthouse keepers",
    "volunteered at the marathon water station with neighbours",
    "planned a camping weekend beside the mountain lake",
];

/// A conversation of two sessions; turn i of speaker A tells topic i, the
/// other speaker answers; questions point at the telling turns.
fn conversation(sample: &str, a: &str, b: &str) -> Value {
    let mut conversation = json!({
        "speaker_a": a,
        "speaker_b": b,
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_2_date_time": "10:04 am on 19 June, 2023",
    });
    let mut qa = Vec::new();
    for session in 1..=2 {
        let mut turns = Vec::new();
        for turn in 1..=12 {
            let dia_id = format!("D{session}:{turn}");
            let topic = TOPICS[(turn - 1) / 2 % TOPICS.len()];
            let (speaker, text) = if turn % 2 == 1 {
                (a, format!("Last week I {topic}, in session {session}."))
            } else {
                (b, "Wow, lovely!".to_owned())
            };
            turns.push(json!({"speaker": speaker, "dia_id": dia_id, "text": text}));
            if turn % 2 == 1 {
                qa.push(json!({
                    "question": format!("When did {a} say they {topic}?"),
                    "answer": "last week",
                    "evidence": [dia_id],
                    "category": 1 + (turn / 2) % 4,
                }));
            }
        }
        conversation[format!("session_{session}")] = Value::from(turns);
    }
    qa.push(json!({
        "question": "What is the colour of the moon?",
        "adversarial_answer": "green",
        "evidence": ["D1:1"],
        "category": 5,
    }));
    json!({"sample_id": sample, "conversation": conversation, "qa": qa})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consolidation_eval_reports_consistent_numbers_against_the_dev_llm() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let llm_port = listener.local_addr().unwrap().port();
    let llm = mnemo_lab::dev_llm::serve(listener).unwrap();
    let llm_handle = llm.handle();
    tokio::spawn(llm);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("locomo-mini.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&json!([
            conversation("conv-a", "Caroline", "Melanie"),
            conversation("conv-b", "Jon", "Gina"),
            conversation("conv-c", "Ignored", "Ignored"),
        ]))
        .unwrap(),
    )
    .unwrap();
    let env: HashMap<String, String> = [
        ("MNEMO_EMBEDDER", "lexical".to_owned()),
        (
            "MNEMO_LLM_BASE_URL",
            format!("http://127.0.0.1:{llm_port}/v1"),
        ),
        ("MNEMO_LLM_MODEL", "mock".to_owned()),
        ("MNEMO_LLM_PRICE_INPUT_PER_MILLION", "0.15".to_owned()),
        ("MNEMO_LLM_PRICE_OUTPUT_PER_MILLION", "0.6".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let settings = mnemo_config::load_from(
        &Overrides {
            config_file: None,
            data_dir: Some(dir.path().join("data")),
            listen: Some("127.0.0.1:0".into()),
        },
        &env,
    )
    .unwrap();

    let report = run(
        settings,
        &ConsolidationArgs {
            file,
            data_dir: None,
            limit: Some(2),
            subject_prefix: "mini".into(),
        },
    )
    .await
    .unwrap();
    llm_handle.stop(true).await;

    assert_eq!(report.conversations, 2);
    assert_eq!(report.messages, 48, "every turn consolidated once");
    // 24 turns a conversation: two batches of 10 and one of the 4 left.
    assert_eq!(report.batches, 6);
    assert_eq!(report.batches_by_strategy.get("llm"), Some(&6));
    assert!(report.fallbacks.is_empty(), "{:?}", report.fallbacks);
    assert!(report.memories_created > 0);
    assert!(report.memories_active > 0);
    assert!(report.memories_active as u64 <= report.memories_created);
    // Per batch at least the extraction call.
    assert!(report.llm_calls >= report.batches as u64);
    assert!(report.per_100_messages(report.llm_calls as f64) > 0.0);
    assert!(report.prompt_tokens > 0 && report.completion_tokens > 0);
    assert!(report.cost() > 0.0);
    // The mock's candidates are the 24 turns of Caroline and Jon (the
    // answers are under 4 words), all at 0.9: above the LLM auto threshold.
    let routing = &report.routing;
    assert_eq!(
        routing.total(),
        routing.memory + routing.review + routing.discarded
    );
    assert_eq!(routing.total(), 24);
    assert_eq!(routing.memory, 24);
    assert!((0.0..=1.0).contains(&report.duplicate_rate()));
    assert_eq!(report.questions, 24);
    assert_eq!(report.adversarial_skipped, 2);
    let recall = report.recall_at();
    assert_eq!(
        recall.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        vec![1, 5, 10, 25]
    );
    for window in recall.windows(2) {
        assert!(
            window[0].1 <= window[1].1,
            "recall grows with k: {recall:?}"
        );
    }
    assert!(recall.iter().all(|(_, r)| (0.0..=1.0).contains(r)));
    assert!(recall[3].1 > 0.0, "the turns are found: {recall:?}");

    let markdown = report.markdown();
    assert!(markdown.contains(&format!("batches of {BATCH_SIZE}")));
    assert!(markdown.contains("| memory | 24 | 100.0 |"), "{markdown}");
}
