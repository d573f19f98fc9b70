//! `GET /v1/consolidation/report`: what consolidation cost the tenant —
//! LLM calls, tokens and an estimated price, in total, per 100 messages and
//! per day, with the batches the rules took over and why.
//!
//! Read from the `BatchConsolidated` records of the log (one per batch, no
//! subject content), so it covers every consolidator process and survives
//! erasures as plain counts. Each record is filed under the subject whose
//! batch it was, so a subject-bound token gets its own subject's report,
//! never the tenant's.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use mnemo_domain::events::{BatchConsolidated, Route};
use mnemo_domain::{EventType, SubjectId, TenantId};
use serde::{Deserialize, Serialize};

use crate::error::ReadError;
use crate::review::{scan, ScanStep};
use crate::RetrieverState;

const MAX_DAYS: u32 = 366;

/// Price per million tokens, for estimates (0 when the operator set none).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LlmPricing {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl LlmPricing {
    fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.input_per_million
            + completion_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Totals {
    pub batches: u64,
    pub messages: u64,
    pub llm_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub estimated_cost: f64,
}

impl Totals {
    fn add(&mut self, record: &BatchConsolidated, pricing: &LlmPricing) {
        self.batches += 1;
        self.messages += u64::from(record.messages);
        self.llm_calls += u64::from(record.llm_calls);
        self.prompt_tokens += record.prompt_tokens;
        self.completion_tokens += record.completion_tokens;
        self.estimated_cost += pricing.cost(record.prompt_tokens, record.completion_tokens);
    }
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Per100 {
    pub llm_calls: f64,
    pub tokens: f64,
    pub estimated_cost: f64,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Report {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub totals: Totals,
    /// `null` before any message was consolidated.
    pub per_100_messages: Option<Per100>,
    /// Batches the rules consolidated instead of the LLM, by reason.
    pub fallbacks: BTreeMap<String, u64>,
    /// Candidates by confidence route.
    pub candidates: BTreeMap<&'static str, u64>,
    /// Models that answered, by batches.
    pub models: BTreeMap<String, u64>,
    pub by_day: BTreeMap<NaiveDate, Totals>,
}

/// Sums the records (in any order) into a report.
pub fn summarise(records: &[(DateTime<Utc>, BatchConsolidated)], pricing: &LlmPricing) -> Report {
    let mut report = Report::default();
    for route in Route::ALL {
        report.candidates.insert(route.as_str(), 0);
    }
    for (at, record) in records {
        report.from = Some(report.from.map_or(*at, |from| from.min(*at)));
        report.to = Some(report.to.map_or(*at, |to| to.max(*at)));
        report.totals.add(record, pricing);
        report
            .by_day
            .entry(at.date_naive())
            .or_default()
            .add(record, pricing);
        if let Some(reason) = &record.fallback {
            // The kind of failure; its details are in the consolidator's logs.
            let kind = reason.split(':').next().unwrap_or(reason).to_owned();
            *report.fallbacks.entry(kind).or_default() += 1;
        }
        if let Some(model) = &record.model {
            *report.models.entry(model.clone()).or_default() += 1;
        }
        for candidate in &record.candidates {
            *report
                .candidates
                .entry(candidate.route.as_str())
                .or_default() += 1;
        }
    }
    let totals = &report.totals;
    if totals.messages > 0 {
        let per = 100.0 / totals.messages as f64;
        report.per_100_messages = Some(Per100 {
            llm_calls: totals.llm_calls as f64 * per,
            tokens: (totals.prompt_tokens + totals.completion_tokens) as f64 * per,
            estimated_cost: totals.estimated_cost * per,
        });
    }
    report
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportQuery {
    /// The last N days (default 30, at most 366).
    pub days: Option<u32>,
}

/// The tenant's consolidation cost over the last `days` (default 30), for
/// a caller with `audit:read` (checked before).
pub struct ReportRequest {
    pub tenant: TenantId,
    /// Only this subject's batches: the caller's binding
    /// ([`mnemo_auth::Principal::visible_subject`]); `None` for the tenant.
    pub subject: Option<SubjectId>,
    pub days: Option<u32>,
}

/// The report and the days it covers.
pub async fn consolidation_report(
    state: &RetrieverState,
    request: ReportRequest,
) -> Result<(u32, Report), ReadError> {
    let days = request.days.unwrap_or(30);
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(ReadError::InvalidDays { max: MAX_DAYS });
    }
    let since = Utc::now() - Duration::days(i64::from(days));
    let mut records = Vec::new();
    scan(
        state,
        &request.tenant,
        EventType::BatchConsolidated,
        request.subject.as_ref(),
        Some(since),
        None,
        |event| {
            // No subject content in the record: nothing to open.
            if let Ok(record) = serde_json::from_value::<BatchConsolidated>(event.payload) {
                records.push((event.recorded_at, record));
            }
            ScanStep::Continue
        },
    )
    .await?;
    let mut report = summarise(&records, &state.llm_pricing);
    report.from = Some(since);
    report.to = Some(Utc::now());
    Ok((days, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_domain::events::RoutedCandidate;

    fn record(messages: u32, calls: u32, prompt: u64, completion: u64) -> BatchConsolidated {
        BatchConsolidated {
            messages,
            strategy: "llm".into(),
            model: Some("gpt-4o-mini".into()),
            prompt_version: Some("v1".into()),
            fallback: None,
            llm_calls: calls,
            prompt_tokens: prompt,
            completion_tokens: completion,
            candidates: vec![
                RoutedCandidate {
                    confidence: 0.9,
                    route: Route::Memory,
                },
                RoutedCandidate {
                    confidence: 0.3,
                    route: Route::Discarded,
                },
            ],
            created: 1,
            reinforced: 0,
            superseded: 0,
            suspected_injections: 0,
        }
    }

    #[test]
    fn totals_per_100_messages_and_days_add_up() {
        let day1 = DateTime::parse_from_rfc3339("2026-11-28T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let day2 = day1 + Duration::days(1);
        let mut fell_back = record(10, 0, 0, 0);
        fell_back.strategy = "rules".into();
        fell_back.fallback = Some("llm_failed: extract call failed: HTTP 500".into());
        let records = vec![
            (day1, record(10, 2, 1_000, 200)),
            (day2, record(30, 4, 3_000, 600)),
            (day2, fell_back),
        ];
        let pricing = LlmPricing {
            input_per_million: 0.15,
            output_per_million: 0.60,
        };
        let report = summarise(&records, &pricing);
        assert_eq!(report.totals.batches, 3);
        assert_eq!(report.totals.messages, 50);
        assert_eq!(report.totals.llm_calls, 6);
        assert_eq!(report.totals.prompt_tokens, 4_000);
        let cost = (4_000.0 * 0.15 + 800.0 * 0.60) / 1e6;
        assert!((report.totals.estimated_cost - cost).abs() < 1e-12);
        let per = report.per_100_messages.unwrap();
        assert!((per.llm_calls - 12.0).abs() < 1e-9);
        assert!((per.tokens - 9_600.0).abs() < 1e-9);
        assert_eq!(report.fallbacks["llm_failed"], 1);
        assert_eq!(report.candidates["memory"], 3);
        assert_eq!(report.candidates["discarded"], 3);
        assert_eq!(report.candidates["review"], 0);
        assert_eq!(report.by_day.len(), 2);
        assert_eq!(report.by_day[&day2.date_naive()].messages, 40);
        assert_eq!(report.models["gpt-4o-mini"], 3);
    }

    #[test]
    fn an_empty_window_has_no_rates() {
        let report = summarise(&[], &LlmPricing::default());
        assert_eq!(report.totals, Totals::default());
        assert!(report.per_100_messages.is_none());
    }
}
