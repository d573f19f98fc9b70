//! What `mnemo verify-erasure` found, store by store: a table for people,
//! JSON for machines, and the exit code both stand for.

use serde::Serialize;

/// What one check came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Something of the subject is still there.
    Found,
    /// Nothing of the subject.
    Clear,
    /// A count that is context, not a finding (e.g. sealed events the log
    /// keeps by design, content posted after the last erasure).
    Info,
    /// Not run, by design or by choice (the reason is its note).
    Skipped,
    /// Could not run: the scan is incomplete.
    Failed,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Found => "FOUND",
            Outcome::Clear => "clear",
            Outcome::Info => "info",
            Outcome::Skipped => "skipped",
            Outcome::Failed => "FAILED",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The store looked at: `subject_keys`, `event_log`, `vector_index`...
    pub store: &'static str,
    /// What was looked for.
    pub check: &'static str,
    /// The tenant the check ran for; none for checks of raw bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub outcome: Outcome,
    pub found: u64,
    /// Where it was found (files, tables, topics, event types), never
    /// content: a canary is named by its index, `canary #1`.
    #[serde(rename = "where")]
    pub locations: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Check {
    /// Found when `found` is above zero, else clear.
    pub fn count(store: &'static str, check: &'static str, found: u64) -> Self {
        Check {
            store,
            check,
            tenant: None,
            outcome: if found > 0 {
                Outcome::Found
            } else {
                Outcome::Clear
            },
            found,
            locations: Vec::new(),
            note: None,
        }
    }

    pub fn info(store: &'static str, check: &'static str, found: u64) -> Self {
        Check {
            outcome: Outcome::Info,
            ..Check::count(store, check, found)
        }
    }

    pub fn skipped(store: &'static str, check: &'static str, why: impl Into<String>) -> Self {
        Check {
            outcome: Outcome::Skipped,
            note: Some(why.into()),
            ..Check::count(store, check, 0)
        }
    }

    pub fn failed(store: &'static str, check: &'static str, error: impl std::fmt::Display) -> Self {
        Check {
            outcome: Outcome::Failed,
            note: Some(error.to_string()),
            ..Check::count(store, check, 0)
        }
    }

    pub fn tenant(mut self, tenant: impl ToString) -> Self {
        self.tenant = Some(tenant.to_string());
        self
    }

    pub fn at(mut self, location: impl Into<String>) -> Self {
        self.locations.push(location.into());
        self
    }

    pub fn at_all(mut self, locations: impl IntoIterator<Item = String>) -> Self {
        self.locations.extend(locations);
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// Names a canary without printing it: `canary #1` is the first `--canary`.
pub fn canary(index: usize) -> String {
    format!("canary #{}", index + 1)
}

/// `canary #1 ×2, canary #3 ×1` for per-canary counts (zeros left out).
pub fn canary_counts(counts: &[u64]) -> String {
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{} ×{n}", canary(i)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub subject: String,
    /// The tenants checked: `--tenant`, or every tenant the subject was
    /// found in.
    pub tenants: Vec<String>,
    /// How many canaries were given (never their values).
    pub canaries: usize,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn found(&self) -> bool {
        self.checks.iter().any(|c| c.outcome == Outcome::Found)
    }

    /// Every check that should have run did.
    pub fn complete(&self) -> bool {
        !self.checks.iter().any(|c| c.outcome == Outcome::Failed)
    }

    /// 1 when something of the subject was found, else 2 when a check
    /// could not run, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.found() {
            1
        } else if !self.complete() {
            2
        } else {
            0
        }
    }

    fn result(&self) -> &'static str {
        match self.exit_code() {
            1 => "found",
            2 => "incomplete",
            _ => "clear",
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).expect("a report always serialises");
        value["result"] = self.result().into();
        value["exit_code"] = self.exit_code().into();
        value
    }

    /// A table, one row per check and one line per location, then the
    /// notes and the verdict.
    pub fn to_text(&self) -> String {
        let header = ["RESULT", "STORE", "TENANT", "CHECK", "FOUND", "WHERE"];
        let mut rows: Vec<[String; 6]> = Vec::new();
        for check in &self.checks {
            let found = match check.outcome {
                Outcome::Skipped | Outcome::Failed => "-".to_owned(),
                _ => check.found.to_string(),
            };
            let mut locations = check.locations.iter();
            rows.push([
                check.outcome.as_str().to_owned(),
                check.store.to_owned(),
                check.tenant.clone().unwrap_or_else(|| "-".to_owned()),
                check.check.to_owned(),
                found,
                locations.next().cloned().unwrap_or_default(),
            ]);
            for location in locations {
                rows.push(Default::default());
                rows.last_mut().expect("just pushed")[5] = location.clone();
            }
        }
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 6]| {
            let mut out = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i == 5 {
                    out.push_str(cell);
                } else {
                    let pad = widths[i] - cell.chars().count();
                    if i == 4 {
                        out.push_str(&" ".repeat(pad));
                        out.push_str(cell);
                    } else {
                        out.push_str(cell);
                        out.push_str(&" ".repeat(pad));
                    }
                    out.push_str("  ");
                }
            }
            out.trim_end().to_owned() + "\n"
        };
        let tenants = match self.tenants.as_slice() {
            [] => "no tenant holds it".to_owned(),
            tenants => format!("tenant {}", tenants.join(", ")),
        };
        let mut out = format!(
            "subject {} ({tenants}), {} canar{}\n\n",
            self.subject,
            self.canaries,
            if self.canaries == 1 { "y" } else { "ies" }
        );
        out.push_str(&line(header));
        for row in &rows {
            out.push_str(&line(row.each_ref().map(String::as_str)));
        }
        let notes: Vec<&Check> = self.checks.iter().filter(|c| c.note.is_some()).collect();
        if !notes.is_empty() {
            out.push('\n');
            for check in notes {
                out.push_str(&format!(
                    "{} / {}: {}\n",
                    check.store,
                    check.check,
                    check.note.as_deref().unwrap_or_default()
                ));
            }
        }
        let count = |outcome| self.checks.iter().filter(|c| c.outcome == outcome).count();
        out.push('\n');
        out.push_str(&match self.exit_code() {
            1 => format!(
                "FOUND: {} check(s) still find something of the subject\n",
                count(Outcome::Found)
            ),
            2 => format!(
                "INCOMPLETE: nothing found, but {} check(s) could not run\n",
                count(Outcome::Failed)
            ),
            _ => "clear: nothing of the subject was found\n".to_owned(),
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(checks: Vec<Check>) -> Report {
        Report {
            subject: "user-42".into(),
            tenants: vec!["acme".into()],
            canaries: 2,
            checks,
        }
    }

    #[test]
    fn the_exit_code_says_found_before_incomplete() {
        let clear = Check::count("memory_read_model", "rows of the subject", 0);
        let found = Check::count("subject_keys", "live data key", 1);
        let failed = Check::failed("vector_index", "points of the subject", "locked");
        let info = Check::info("event_log", "events of the subject", 7);
        assert_eq!(report(vec![clear.clone(), info.clone()]).exit_code(), 0);
        assert_eq!(report(vec![clear.clone(), failed.clone()]).exit_code(), 2);
        assert_eq!(report(vec![found, failed]).exit_code(), 1);
        let skipped = Check::skipped("postgres_files", "canary bytes", "no --pg-data-dir");
        assert_eq!(report(vec![clear, skipped]).exit_code(), 0);
    }

    #[test]
    fn the_table_names_each_location_and_canaries_by_index() {
        let text = report(vec![
            Check::count("files", "canary bytes in the data dir", 3)
                .at(format!("mnemo.db: {}", canary_counts(&[2, 0])))
                .at(format!("mnemo.db-wal: {}", canary_counts(&[0, 1]))),
            Check::count("subject_keys", "live data key", 0).tenant("acme"),
        ])
        .to_text();
        assert!(text.contains("FOUND   files"), "{text}");
        assert!(text.contains("mnemo.db: canary #1 ×2"), "{text}");
        assert!(
            text.contains("\n  "),
            "a second location on its own line: {text}"
        );
        assert!(text.contains("mnemo.db-wal: canary #2 ×1"), "{text}");
        assert!(text.contains("clear   subject_keys  acme"), "{text}");
        assert!(text.ends_with("FOUND: 1 check(s) still find something of the subject\n"));
    }

    #[test]
    fn json_carries_the_verdict() {
        let json = report(vec![
            Check::count("bus", "records that open", 0).tenant("acme")
        ])
        .to_json();
        assert_eq!(json["result"], "clear");
        assert_eq!(json["exit_code"], 0);
        assert_eq!(json["checks"][0]["outcome"], "clear");
        assert_eq!(json["checks"][0]["tenant"], "acme");
        assert!(json["checks"][0]["where"].as_array().unwrap().is_empty());
    }
}
