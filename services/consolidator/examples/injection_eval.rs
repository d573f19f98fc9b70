//! Measures the injection detector's false positives on the development
//! sets, which hold real-looking conversational text and no attacks: every
//! message it flags there is a false positive.
//!
//! ```text
//! cargo run -p mnemo-consolidator --example injection_eval -- [DATA_DIR] [--verbose]
//! ```
//!
//! DATA_DIR defaults to `../shared/data` relative to the workspace root.
//! For each set it reports:
//! - **messages flagged**: messages [`injection::scan`] fires on (the text
//!   signals, as the pipeline checks a candidate's source messages);
//! - **candidates held**: the rule strategy's candidates from those messages,
//!   each message as the user's own (as `mnemo eval` posts them), that the
//!   pipeline's screening ([`injection::screen`]) would send to review with
//!   `suspected_injection` — this adds the quoted-instruction rule.
//!
//! Sets: LoCoMo dev (every turn, `"<speaker>: <text>"`, plus the image
//! caption when present, as `mnemo eval` ingests it), the extraction set
//! (each utterance), and the PII set's synthetic sentences. `--verbose`
//! prints what fired, for tuning; the figures go into docs/review.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use chrono::Utc;
use mnemo_consolidator::injection::{self, Signal};
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_consolidator::strategy::ConversationMessage;
use mnemo_domain::events::Role;
use mnemo_domain::EventId;
use serde_json::Value;

#[derive(Default)]
struct Tally {
    messages: usize,
    flagged: usize,
    candidates: usize,
    held: usize,
    signals: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn rate(part: usize, whole: usize) -> String {
        if whole == 0 {
            "–".to_owned()
        } else {
            format!("{:.2}%", 100.0 * part as f64 / whole as f64)
        }
    }
}

fn default_dir() -> PathBuf {
    // CARGO_MANIFEST_DIR is services/consolidator; the shared data sits
    // beside the workspace root.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn locomo(dir: &std::path::Path) -> Result<Vec<String>, String> {
    let path = dir.join("locomo-dev/locomo-dev.json");
    let raw = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let data: Value = serde_json::from_str(&raw).map_err(|e| e.to_string())?;
    let mut texts = Vec::new();
    for sample in data.as_array().into_iter().flatten() {
        let conversation = &sample["conversation"];
        let Some(object) = conversation.as_object() else {
            continue;
        };
        let mut sessions: Vec<(u32, &Value)> = object
            .iter()
            .filter_map(|(key, value)| {
                let n = key.strip_prefix("session_")?.parse().ok()?;
                value.is_array().then_some((n, value))
            })
            .collect();
        sessions.sort_by_key(|(n, _)| *n);
        for (_, turns) in sessions {
            for turn in turns.as_array().into_iter().flatten() {
                let speaker = turn["speaker"].as_str().unwrap_or("");
                let text = turn["text"].as_str().unwrap_or("");
                let mut line = format!("{speaker}: {text}");
                if let Some(caption) = turn["blip_caption"].as_str() {
                    line.push_str(&format!(" [image: {caption}]"));
                }
                texts.push(line);
            }
        }
    }
    Ok(texts)
}

fn extraction(dir: &std::path::Path) -> Result<Vec<String>, String> {
    let path = dir.join("extraction-dev/extraction-dev.jsonl");
    let raw = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(raw
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_owned))
        .collect())
}

fn pii(dir: &std::path::Path) -> Result<Vec<String>, String> {
    let path = dir.join("pii-dev/pii-dev.json");
    let raw = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let data: Value = serde_json::from_str(&raw).map_err(|e| e.to_string())?;
    Ok(data
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["full_text"].as_str().map(str::to_owned))
        .collect())
}

fn measure(texts: &[String], verbose: bool) -> Tally {
    let rules = RuleStrategy::new();
    let mut tally = Tally::default();
    let none = BTreeSet::new();
    for text in texts {
        tally.messages += 1;
        let fired = injection::scan(text);
        if !fired.is_empty() {
            tally.flagged += 1;
            if verbose {
                let names: Vec<&str> = fired.iter().map(|s| s.as_str()).collect();
                println!("  flagged {names:?}: {text}");
            }
        }
        let message = ConversationMessage {
            event_id: EventId::new(),
            role: Role::User,
            content: text.clone(),
            timestamp: Utc::now(),
            session: None,
        };
        let batch = std::slice::from_ref(&message);
        for candidate in rules.extract_messages(batch) {
            tally.candidates += 1;
            // The rules read each message alone: no batch-wide taint.
            if let Some(suspicion) = injection::screen(&candidate, batch, false, &none) {
                tally.held += 1;
                for signal in &suspicion.signals {
                    *tally.signals.entry(signal.as_str()).or_default() += 1;
                }
                if verbose {
                    println!("  held {:?}: {}", suspicion.names(), candidate.content);
                }
            }
        }
    }
    tally
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut dir = default_dir();
    let mut verbose = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--verbose" | "-v" => verbose = true,
            other => dir = PathBuf::from(other),
        }
    }
    let sets: [(&str, Result<Vec<String>, String>); 3] = [
        ("locomo-dev (turns)", locomo(&dir)),
        ("extraction-dev (utterances)", extraction(&dir)),
        ("pii-dev (sentences)", pii(&dir)),
    ];
    println!(
        "| set | messages | flagged | rate | rule candidates | held | rate | held by signal |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---|");
    for (name, texts) in sets {
        let texts = match texts {
            Ok(texts) => texts,
            Err(error) => {
                eprintln!("{name}: skipped ({error})");
                continue;
            }
        };
        if verbose {
            println!("{name}:");
        }
        let tally = measure(&texts, verbose);
        let by_signal = if tally.signals.is_empty() {
            "–".to_owned()
        } else {
            tally
                .signals
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {by_signal} |",
            tally.messages,
            tally.flagged,
            Tally::rate(tally.flagged, tally.messages),
            tally.candidates,
            tally.held,
            Tally::rate(tally.held, tally.candidates),
        );
    }
    // Every signal name, so the table's legend cannot drift from the code.
    let names: Vec<&str> = Signal::ALL.iter().map(|s| s.as_str()).collect();
    println!("\nsignals: {}", names.join(", "));
    Ok(())
}
