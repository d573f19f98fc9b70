//! Scores the rule strategy's extraction on a labelled set.
//!
//! ```text
//! cargo run -p mnemo-consolidator --example extraction_eval -- [PATH] [--min-confidence X] [--verbose]
//! ```
//!
//! PATH defaults to `../shared/data/extraction-dev/extraction-dev.jsonl`
//! relative to the workspace root. Each line is `{text, lang, expect: [{kind,
//! must_contain: [..]}]}`. Per language: recall = expected memories matched
//! by a produced candidate of the right kind whose content contains every
//! `must_contain` string (case-insensitive); precision = produced candidates
//! that match an expected memory / all produced (candidates for noise lines
//! count against it). A candidate matches at most one expected memory and
//! the other way round.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::Utc;
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_consolidator::strategy::{Candidate, ConsolidationStrategy, ConversationMessage, Spend};
use mnemo_domain::events::Role;
use mnemo_domain::{EventId, MemoryKind};
use serde_json::Value;

struct Expected {
    kind: MemoryKind,
    must_contain: Vec<String>,
}

struct Line {
    text: String,
    lang: String,
    expect: Vec<Expected>,
}

#[derive(Default)]
struct Score {
    lines: usize,
    expected: usize,
    found: usize,
    produced: usize,
    correct: usize,
}

impl Score {
    fn add(&mut self, other: &Score) {
        self.lines += other.lines;
        self.expected += other.expected;
        self.found += other.found;
        self.produced += other.produced;
        self.correct += other.correct;
    }

    fn precision(&self) -> f64 {
        ratio(self.correct, self.produced)
    }

    fn recall(&self) -> f64 {
        ratio(self.found, self.expected)
    }

    fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn ratio(numerator: usize, denominator: usize) -> f64 {
    if denominator == 0 {
        1.0
    } else {
        numerator as f64 / denominator as f64
    }
}

fn matches(candidate: &Candidate, expected: &Expected) -> bool {
    let content = candidate.content.to_lowercase();
    candidate.kind == expected.kind
        && expected
            .must_contain
            .iter()
            .all(|needle| content.contains(&needle.to_lowercase()))
}

fn parse(raw: &str, number: usize) -> Result<Line, String> {
    let value: Value =
        serde_json::from_str(raw).map_err(|e| format!("line {number}: not JSON: {e}"))?;
    let text = value["text"]
        .as_str()
        .ok_or(format!("line {number}: no text"))?;
    let lang = value["lang"].as_str().unwrap_or("?");
    let mut expect = Vec::new();
    for item in value["expect"].as_array().into_iter().flatten() {
        let kind = item["kind"]
            .as_str()
            .and_then(MemoryKind::parse)
            .ok_or(format!("line {number}: bad kind {}", item["kind"]))?;
        let must_contain = item["must_contain"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect();
        expect.push(Expected { kind, must_contain });
    }
    Ok(Line {
        text: text.to_owned(),
        lang: lang.to_owned(),
        expect,
    })
}

fn default_path() -> PathBuf {
    // CARGO_MANIFEST_DIR is services/consolidator; the workspace root is two
    // levels up and the shared data sits beside it.
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/extraction-dev/extraction-dev.jsonl")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut path = default_path();
    let mut min_confidence = 0.0f32;
    let mut verbose = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--min-confidence" => {
                min_confidence = args
                    .next()
                    .ok_or("--min-confidence needs a value")?
                    .parse()?;
            }
            "--verbose" | "-v" => verbose = true,
            other => path = PathBuf::from(other),
        }
    }
    let raw = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let strategy = RuleStrategy::new();
    let mut per_lang: BTreeMap<String, Score> = BTreeMap::new();
    for (index, raw_line) in raw.lines().enumerate() {
        if raw_line.trim().is_empty() {
            continue;
        }
        let line = parse(raw_line, index + 1)?;
        let message = ConversationMessage {
            event_id: EventId::new(),
            role: Role::User,
            content: line.text.clone(),
            timestamp: Utc::now(),
            session: None,
        };
        let produced: Vec<Candidate> = strategy
            .extract(std::slice::from_ref(&message), &Spend::default())
            .await?
            .into_iter()
            .filter(|c| c.confidence >= min_confidence)
            .collect();
        // Greedy one-to-one matching, expected memories in order.
        let mut used = vec![false; produced.len()];
        let mut found = 0;
        for expected in &line.expect {
            if let Some(position) =
                (0..produced.len()).find(|&i| !used[i] && matches(&produced[i], expected))
            {
                used[position] = true;
                found += 1;
            }
        }
        let correct = used.iter().filter(|u| **u).count();
        let score = per_lang.entry(line.lang.clone()).or_default();
        score.lines += 1;
        score.expected += line.expect.len();
        score.found += found;
        score.produced += produced.len();
        score.correct += correct;
        let perfect = found == line.expect.len() && correct == produced.len();
        if verbose || !perfect {
            println!(
                "{} [{}] {}",
                if perfect { "ok  " } else { "MISS" },
                line.lang,
                line.text
            );
            for (i, candidate) in produced.iter().enumerate() {
                println!(
                    "       {} {:<10} {:.2} {:?} {:?}",
                    if used[i] { "+" } else { "-" },
                    candidate.kind.as_str(),
                    candidate.confidence,
                    candidate.content,
                    candidate.tags
                );
            }
        }
    }
    println!();
    let shown = path.canonicalize().unwrap_or(path);
    println!("{} (min confidence {min_confidence})", shown.display());
    println!(
        "{:<8} {:>5} {:>8} {:>8} {:>9} {:>7} {:>9} {:>7} {:>6}",
        "lang", "lines", "expected", "found", "produced", "correct", "precision", "recall", "f1"
    );
    let mut total = Score::default();
    for (lang, score) in &per_lang {
        print_row(lang, score);
        total.add(score);
    }
    print_row("overall", &total);
    Ok(())
}

fn print_row(label: &str, score: &Score) {
    println!(
        "{:<8} {:>5} {:>8} {:>8} {:>9} {:>7} {:>9.3} {:>7.3} {:>6.3}",
        label,
        score.lines,
        score.expected,
        score.found,
        score.produced,
        score.correct,
        score.precision(),
        score.recall(),
        score.f1()
    );
}
