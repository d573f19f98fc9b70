//! A tenant's daily LLM budget, counted from the log.
//!
//! Key decision: the spend is read from the `BatchConsolidated` events of
//! the tenant's UTC day, not kept in a counter of its own. Every LLM call a
//! batch makes is in its record, every consolidator process appends there,
//! so all processes see one spend without another shared store; each keeps
//! a running total per tenant and reads only the records after the last one
//! it counted. A process may overrun by the batches in flight elsewhere, at
//! most one batch's calls per process.

use std::collections::HashMap;

use chrono::{DateTime, NaiveTime, Utc};
use mnemo_domain::events::{BatchConsolidated, EventType};
use mnemo_domain::TenantId;
use mnemo_event_store::{EventQuery, EventStore, EventStoreError};
use tokio::sync::Mutex;

const PAGE: u32 = 500;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DailySpend {
    pub calls: u64,
    pub tokens: u64,
}

struct Tally {
    day_start: DateTime<Utc>,
    after_position: Option<i64>,
    spend: DailySpend,
}

#[derive(Default)]
pub struct LlmBudget {
    tallies: Mutex<HashMap<TenantId, Tally>>,
}

fn day_start(now: DateTime<Utc>) -> DateTime<Utc> {
    now.date_naive().and_time(NaiveTime::MIN).and_utc()
}

impl LlmBudget {
    /// What the tenant's consolidations spent on the LLM today (UTC).
    pub async fn spent_today(
        &self,
        store: &dyn EventStore,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<DailySpend, EventStoreError> {
        let today = day_start(now);
        let mut tallies = self.tallies.lock().await;
        let tally = tallies.entry(tenant.clone()).or_insert(Tally {
            day_start: today,
            after_position: None,
            spend: DailySpend::default(),
        });
        if tally.day_start != today {
            *tally = Tally {
                day_start: today,
                after_position: None,
                spend: DailySpend::default(),
            };
        }
        loop {
            let page = store
                .query(
                    tenant,
                    &EventQuery {
                        event_types: vec![EventType::BatchConsolidated.as_str().to_owned()],
                        from: Some(today),
                        after_position: tally.after_position,
                        limit: PAGE,
                        ..Default::default()
                    },
                )
                .await?;
            for event in &page {
                tally.after_position = Some(event.global_position);
                // The record holds no subject content: nothing to open.
                if let Ok(record) =
                    serde_json::from_value::<BatchConsolidated>(event.payload.clone())
                {
                    tally.spend.calls += u64::from(record.llm_calls);
                    tally.spend.tokens += record.prompt_tokens + record.completion_tokens;
                }
            }
            if page.len() < PAGE as usize {
                return Ok(tally.spend);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_day_starts_at_utc_midnight() {
        let at = DateTime::parse_from_rfc3339("2026-11-29T23:59:59+00:00")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(day_start(at).to_rfc3339(), "2026-11-29T00:00:00+00:00");
    }
}
