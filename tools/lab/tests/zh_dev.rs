//! The Chinese retrieval set `data/zh-dev.json` loads with the eval's own
//! loader, has enough questions of categories 1–4, dates every session, and
//! names only turns that exist. No server: it checks the file alone.

use std::collections::HashSet;

use mnemo_lab::eval::summarize_dataset;
use serde_json::Value;

fn data_set() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/zh-dev.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read zh-dev.json"))
        .expect("zh-dev.json is JSON")
}

#[test]
fn loads_with_the_eval_loader_and_asks_enough_questions() {
    let summary = summarize_dataset(&data_set()).expect("the eval loader accepts it");
    assert!(summary.conversations >= 2, "{summary:?}");
    assert!((150..=300).contains(&summary.turns), "{summary:?}");
    assert_eq!(summary.undated_turns, 0, "every session date parses");
    assert_eq!(summary.skipped_no_evidence, 0, "{summary:?}");
    assert_eq!(summary.adversarial, 0, "{summary:?}");
    let asked: usize = summary.asked_by_category.iter().sum();
    assert!(asked >= 50, "{summary:?}");
    assert!(
        summary.asked_by_category.iter().all(|&n| n >= 5),
        "every category has questions: {summary:?}"
    );
}

#[test]
fn every_evidence_id_names_a_turn_of_its_conversation() {
    for conversation in data_set().as_array().expect("a list") {
        let sample = conversation["sample_id"].as_str().expect("sample_id");
        let turns: HashSet<&str> = conversation["conversation"]
            .as_object()
            .expect("conversation")
            .iter()
            .filter(|(key, _)| key.starts_with("session_") && !key.ends_with("_date_time"))
            .flat_map(|(_, session)| session.as_array().expect("a session is a list"))
            .map(|turn| turn["dia_id"].as_str().expect("dia_id"))
            .collect();
        for qa in conversation["qa"].as_array().expect("qa") {
            let evidence = qa["evidence"].as_array().expect("evidence");
            assert!(!evidence.is_empty(), "{sample}: {qa}");
            for id in evidence {
                let id = id.as_str().expect("an evidence id is a string");
                assert!(turns.contains(id), "{sample}: {id} is not a turn ({qa})");
            }
            let category = qa["category"].as_u64().expect("category");
            assert!((1..=4).contains(&category), "{sample}: {qa}");
            if category == 1 {
                // Multi-hop: the turns come from more than one session.
                let sessions: HashSet<&str> = evidence
                    .iter()
                    .filter_map(|id| id.as_str()?.split(':').next())
                    .collect();
                assert!(sessions.len() >= 2, "{sample}: one session only ({qa})");
            }
        }
    }
}
