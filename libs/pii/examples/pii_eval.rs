//! Scores the detector on a Presidio-style evaluation set and prints a
//! markdown table of precision and recall per entity type.
//!
//! ```text
//! cargo run -p mnemo-pii --example pii_eval -- [PATH] [--dump-predictions]
//! ```
//!
//! PATH defaults to `../shared/data/pii-dev/pii-dev.json` relative to the
//! workspace root. The file is a JSON list of `{full_text, spans: [{
//! entity_type, start_position, end_position, ..}], ..}` with CHARACTER
//! offsets. A gold span is found when a predicted span of the same type
//! overlaps it; a predicted span is a true positive when it overlaps a gold
//! span of the same type.
//!
//! `--dump-predictions` also prints one JSON line per prediction with the
//! record index, type and character offsets, for error analysis against the
//! data set. Like the library, this tool never prints a detected value.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use mnemo_pii::{Detector, PiiKind};
use serde::Deserialize;

#[derive(Deserialize)]
struct Record {
    full_text: String,
    spans: Vec<GoldSpan>,
}

#[derive(Deserialize)]
struct GoldSpan {
    entity_type: String,
    start_position: usize,
    end_position: usize,
}

/// Gold entity type for each of our kinds that the data set labels.
fn gold_type(kind: PiiKind) -> Option<&'static str> {
    match kind {
        PiiKind::Email => Some("EMAIL_ADDRESS"),
        PiiKind::Phone => Some("PHONE_NUMBER"),
        PiiKind::CreditCard => Some("CREDIT_CARD"),
        PiiKind::Iban => Some("IBAN_CODE"),
        PiiKind::UsSsn => Some("US_SSN"),
        PiiKind::IpAddress => Some("IP_ADDRESS"),
        PiiKind::CnResidentId | PiiKind::Secret => None,
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    gold: usize,
    found: usize,
    predicted: usize,
    true_pos: usize,
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "n/a".to_owned()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut path = None;
    let mut dump = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--dump-predictions" => dump = true,
            _ => path = Some(PathBuf::from(arg)),
        }
    }
    let path = path.unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pii-dev/pii-dev.json")
    });
    let path = path.canonicalize().unwrap_or(path);
    let records: Vec<Record> = serde_json::from_slice(&std::fs::read(&path)?)?;

    let detector = Detector::new();
    let claimed: Vec<PiiKind> = PiiKind::ALL
        .into_iter()
        .filter(|&k| gold_type(k).is_some())
        .collect();
    let mut tallies: BTreeMap<PiiKind, Tally> = BTreeMap::new();
    let mut unclaimed: BTreeMap<PiiKind, usize> = BTreeMap::new();
    let mut detect_time = std::time::Duration::ZERO;
    let mut chars_total = 0usize;

    for (index, record) in records.iter().enumerate() {
        let text = &record.full_text;
        chars_total += text.chars().count();
        let started = Instant::now();
        let detections = detector.detect(text);
        detect_time += started.elapsed();

        // Byte offsets to character offsets.
        let predicted: Vec<(PiiKind, (usize, usize))> = detections
            .iter()
            .map(|d| {
                let start = text[..d.start].chars().count();
                let end = start + text[d.start..d.end].chars().count();
                (d.kind, (start, end))
            })
            .collect();
        if dump {
            for (kind, (start, end)) in &predicted {
                println!(
                    "{}",
                    serde_json::json!({"record": index, "kind": kind.code(), "start": start, "end": end})
                );
            }
        }
        for &(kind, _) in &predicted {
            if gold_type(kind).is_none() {
                *unclaimed.entry(kind).or_default() += 1;
            }
        }
        for &kind in &claimed {
            let Some(gold_name) = gold_type(kind) else {
                continue;
            };
            let gold: Vec<(usize, usize)> = record
                .spans
                .iter()
                .filter(|s| s.entity_type == gold_name)
                .map(|s| (s.start_position, s.end_position))
                .collect();
            let pred: Vec<(usize, usize)> = predicted
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|&(_, span)| span)
                .collect();
            let t = tallies.entry(kind).or_default();
            t.gold += gold.len();
            t.predicted += pred.len();
            t.found += gold
                .iter()
                .filter(|&&g| pred.iter().any(|&p| overlaps(g, p)))
                .count();
            t.true_pos += pred
                .iter()
                .filter(|&&p| gold.iter().any(|&g| overlaps(g, p)))
                .count();
        }
    }

    println!(
        "mnemo-pii on {} texts ({} chars) from {}; detection took {:.1} ms\n",
        records.len(),
        chars_total,
        path.display(),
        detect_time.as_secs_f64() * 1000.0
    );
    println!("| type | gold | found | recall | predicted | true pos | precision |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut micro = Tally::default();
    for &kind in &claimed {
        let t = tallies.get(&kind).copied().unwrap_or_default();
        micro.gold += t.gold;
        micro.found += t.found;
        micro.predicted += t.predicted;
        micro.true_pos += t.true_pos;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            gold_type(kind).unwrap_or("?"),
            t.gold,
            t.found,
            pct(t.found, t.gold),
            t.predicted,
            t.true_pos,
            pct(t.true_pos, t.predicted)
        );
    }
    println!(
        "| **micro** | {} | {} | {} | {} | {} | {} |",
        micro.gold,
        micro.found,
        pct(micro.found, micro.gold),
        micro.predicted,
        micro.true_pos,
        pct(micro.true_pos, micro.predicted)
    );
    println!("\nKinds without a gold type (every detection is a false positive here):\n");
    println!("| kind | detections |");
    println!("|---|---:|");
    for kind in [PiiKind::CnResidentId, PiiKind::Secret] {
        println!(
            "| {} | {} |",
            kind.code(),
            unclaimed.get(&kind).copied().unwrap_or(0)
        );
    }
    Ok(())
}
