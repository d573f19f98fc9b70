//! Per-tenant quotas (`[quotas]`): requests per second (a token bucket
//! with a burst of one second's worth), messages per UTC day, active
//! memories per subject and the bytes the tenant's events take, checked
//! before anything is appended, so a refused request leaves no trace in
//! the log.
//!
//! The usage limits are read from the stores ([`crate::IngestState`] asks
//! them): the memory count from the read model (it trails the log by the
//! projection's lag, so a burst may overshoot by what it writes within
//! it); the storage from the log, re-read every [`STORAGE_FRESH_FOR`] per
//! tenant (one scan of the tenant's rows) and, in between, raised by the
//! size of the text each admitted request carries (the log's figure is a
//! little higher: sealing and metadata).
//!
//! The day's messages are counted from the log too (the tenant's
//! `MessageReceived` events since UTC midnight), re-read every
//! [`DAY_FRESH_FOR`] and raised in between by each admitted batch: a
//! restart does not start the day afresh, and replicas sharing a log share
//! the day's count, each overshooting by at most what the others admit
//! within that time.
//!
//! Key decision: the request rate lives in this process. One ingest
//! process (the embedded server, or one replica) enforces it exactly; N
//! replicas behind a balancer admit up to N times it (a rate shared
//! between processes would cost a store round trip per request). Erasure
//! and export requests are never refused by a quota: a data subject's
//! rights do not wait for a tenant's budget.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_config::{Policies, Quota};
use mnemo_domain::TenantId;

/// Which limit refused a request, and when to try again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    RequestsPerSecond {
        limit: u32,
        retry_after: u64,
    },
    MessagesPerDay {
        limit: u64,
        retry_after: u64,
    },
    /// The subject has this many active memories already.
    MemoriesPerSubject {
        limit: u64,
    },
    /// The tenant's events take this many bytes already.
    StorageBytes {
        limit: u64,
    },
}

/// How long a tenant's storage figure is reused before the log is asked
/// again.
pub const STORAGE_FRESH_FOR: Duration = Duration::from_secs(10);

/// How long a tenant's count of the day's messages read from the log is
/// raised by the batches admitted here before the log is asked again.
pub const DAY_FRESH_FOR: Duration = Duration::from_secs(10);

/// `Retry-After` for a usage limit: nothing refills it by itself, but a
/// deletion, the forgetter or a raised quota may free room; a minute is
/// how often a well-behaved client should look again.
pub const USAGE_RETRY_AFTER: u64 = 60;

impl Refusal {
    /// The limit's name, as configured and as the error body and the
    /// `mnemo_ingest_refused_total` label say it.
    pub fn limit_name(&self) -> &'static str {
        match self {
            Refusal::RequestsPerSecond { .. } => "requests_per_second",
            Refusal::MessagesPerDay { .. } => "messages_per_day",
            Refusal::MemoriesPerSubject { .. } => "memories_per_subject",
            Refusal::StorageBytes { .. } => "storage_bytes",
        }
    }

    pub fn retry_after(&self) -> u64 {
        match self {
            Refusal::RequestsPerSecond { retry_after, .. }
            | Refusal::MessagesPerDay { retry_after, .. } => *retry_after,
            Refusal::MemoriesPerSubject { .. } | Refusal::StorageBytes { .. } => USAGE_RETRY_AFTER,
        }
    }

    pub fn limit(&self) -> u64 {
        match self {
            Refusal::RequestsPerSecond { limit, .. } => u64::from(*limit),
            Refusal::MessagesPerDay { limit, .. }
            | Refusal::MemoriesPerSubject { limit }
            | Refusal::StorageBytes { limit } => *limit,
        }
    }
}

#[derive(Debug, Default)]
struct Use {
    /// Tokens left and when they were counted.
    bucket: Option<(f64, DateTime<Utc>)>,
    /// Messages accepted on that day.
    day: Option<(NaiveDate, u64)>,
    /// When the log last gave the day's count.
    day_read: Option<Instant>,
}

pub struct Quotas {
    policies: Policies<Quota>,
    used: Mutex<HashMap<TenantId, Use>>,
    /// Each tenant's storage figure and when the log gave it.
    stored: Mutex<HashMap<TenantId, (Instant, u64)>>,
}

impl Quotas {
    pub fn new(policies: Policies<Quota>) -> Self {
        Quotas {
            policies,
            used: Mutex::default(),
            stored: Mutex::default(),
        }
    }

    /// The tenant's quota.
    pub fn policy(&self, tenant: &TenantId) -> &Quota {
        self.policies.for_tenant(tenant.as_str())
    }

    /// The tenant's storage figure, when one younger than
    /// [`STORAGE_FRESH_FOR`] is known.
    pub fn cached_storage(&self, tenant: &TenantId) -> Option<u64> {
        let stored = self.stored.lock().unwrap_or_else(|p| p.into_inner());
        stored
            .get(tenant)
            .filter(|(at, _)| at.elapsed() < STORAGE_FRESH_FOR)
            .map(|(_, bytes)| *bytes)
    }

    pub fn remember_storage(&self, tenant: &TenantId, bytes: u64) {
        self.stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tenant.clone(), (Instant::now(), bytes));
    }

    /// Counts `bytes` more against the tenant's cached storage figure (an
    /// admitted request's text), until the log is asked again.
    pub fn add_storage(&self, tenant: &TenantId, bytes: u64) {
        let mut stored = self.stored.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, figure)) = stored.get_mut(tenant) {
            *figure = figure.saturating_add(bytes);
        }
    }

    /// Whether the tenant's count of `today`'s messages should be read
    /// from the log before a batch is admitted: its quota limits them, and
    /// no count of that day read less than [`DAY_FRESH_FOR`] ago is known.
    pub fn day_needs_reading(&self, tenant: &TenantId, today: NaiveDate) -> bool {
        if self.policy(tenant).messages_per_day.is_none() {
            return false;
        }
        let used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        !used.get(tenant).is_some_and(|entry| {
            entry.day.is_some_and(|(day, _)| day == today)
                && entry
                    .day_read
                    .is_some_and(|at| at.elapsed() < DAY_FRESH_FOR)
        })
    }

    /// The tenant's messages of `today` as the log counts them, in place
    /// of the count kept here.
    pub fn remember_day(&self, tenant: &TenantId, today: NaiveDate, messages: u64) {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        let entry = used.entry(tenant.clone()).or_default();
        entry.day = Some((today, messages));
        entry.day_read = Some(Instant::now());
    }

    /// Admits one request carrying `messages` messages at `now`, counting
    /// it, or says which limit refuses it (counting nothing).
    pub fn admit(
        &self,
        tenant: &TenantId,
        messages: u64,
        now: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        let quota = self.policies.for_tenant(tenant.as_str());
        if quota.requests_per_second.is_none() && quota.messages_per_day.is_none() {
            return Ok(());
        }
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        let entry = used.entry(tenant.clone()).or_default();
        let tokens = quota.requests_per_second.map(|rate| {
            let rate = f64::from(rate);
            let (left, at) = entry.bucket.unwrap_or((rate, now));
            let elapsed = (now - at).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
            (rate, (left + elapsed * rate).min(rate))
        });
        if let (Some(limit), Some((rate, tokens))) = (quota.requests_per_second, tokens) {
            if tokens < 1.0 {
                return Err(Refusal::RequestsPerSecond {
                    limit,
                    retry_after: ((1.0 - tokens) / rate).ceil().max(1.0) as u64,
                });
            }
        }
        let today = now.date_naive();
        let so_far = match entry.day {
            Some((day, count)) if day == today => count,
            _ => 0,
        };
        if let Some(limit) = quota.messages_per_day {
            if messages > 0 && so_far + messages > limit {
                let midnight = today
                    .succ_opt()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|m| m.and_utc());
                let retry_after = midnight.map_or(86_400, |m| (m - now).num_seconds().max(1));
                return Err(Refusal::MessagesPerDay {
                    limit,
                    retry_after: retry_after as u64,
                });
            }
        }
        if let Some((_, tokens)) = tokens {
            entry.bucket = Some((tokens - 1.0, now));
        }
        entry.day = Some((today, so_far + messages));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::TimeZone;

    use super::*;

    fn quotas(default: Quota, acme: Option<Quota>) -> Quotas {
        let mut tenants = BTreeMap::new();
        if let Some(acme) = acme {
            tenants.insert("acme".to_owned(), acme);
        }
        Quotas::new(Policies { default, tenants })
    }

    fn at(h: u32, m: u32, s: u32, ms: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 31, h, m, s).unwrap()
            + chrono::Duration::milliseconds(ms.into())
    }

    fn tenant(name: &str) -> TenantId {
        TenantId::parse(name).unwrap()
    }

    #[test]
    fn a_burst_past_the_rate_is_refused_until_tokens_refill() {
        let quotas = quotas(
            Quota {
                requests_per_second: Some(2),
                messages_per_day: None,
                ..Default::default()
            },
            None,
        );
        let t = tenant("t");
        assert!(quotas.admit(&t, 1, at(10, 0, 0, 0)).is_ok());
        assert!(quotas.admit(&t, 1, at(10, 0, 0, 0)).is_ok());
        let refused = quotas.admit(&t, 1, at(10, 0, 0, 100)).unwrap_err();
        assert_eq!(refused.limit_name(), "requests_per_second");
        assert_eq!(refused.retry_after(), 1);
        // Half a second refills one token at 2/s.
        assert!(quotas.admit(&t, 1, at(10, 0, 0, 600)).is_ok());
        assert!(quotas.admit(&t, 1, at(10, 0, 0, 600)).is_err());
    }

    #[test]
    fn the_daily_limit_refuses_a_batch_whole_and_resets_at_utc_midnight() {
        let quotas = quotas(
            Quota {
                requests_per_second: None,
                messages_per_day: Some(10),
                ..Default::default()
            },
            None,
        );
        let t = tenant("t");
        assert!(quotas.admit(&t, 8, at(23, 0, 0, 0)).is_ok());
        let refused = quotas.admit(&t, 3, at(23, 59, 0, 0)).unwrap_err();
        assert_eq!(
            refused,
            Refusal::MessagesPerDay {
                limit: 10,
                retry_after: 60
            }
        );
        // Refused means not counted: two more still fit.
        assert!(quotas.admit(&t, 2, at(23, 59, 30, 0)).is_ok());
        assert!(quotas.admit(&t, 1, at(23, 59, 31, 0)).is_err());
        let next_day = at(23, 59, 59, 0) + chrono::Duration::seconds(2);
        assert!(quotas.admit(&t, 10, next_day).is_ok());
    }

    /// The log's count of the day replaces the one kept here, is read
    /// again for another day, and only for a tenant whose quota counts
    /// the day's messages; admitted batches raise it in between.
    #[test]
    fn the_days_count_read_from_the_log_is_raised_by_what_is_admitted() {
        let quotas = quotas(
            Quota {
                messages_per_day: Some(10),
                ..Default::default()
            },
            Some(Quota::default()),
        );
        let t = tenant("t");
        let now = at(12, 0, 0, 0);
        let today = now.date_naive();
        assert!(!quotas.day_needs_reading(&tenant("acme"), today));
        assert!(quotas.day_needs_reading(&t, today));
        quotas.remember_day(&t, today, 7);
        assert!(!quotas.day_needs_reading(&t, today));
        assert!(quotas.day_needs_reading(&t, today.succ_opt().unwrap()));
        assert!(quotas.admit(&t, 2, now).is_ok());
        assert!(quotas.admit(&t, 2, now).is_err());
        assert!(quotas.admit(&t, 1, now).is_ok());
    }

    #[test]
    fn tenants_are_counted_apart_and_by_their_own_quota() {
        let quotas = quotas(
            Quota {
                requests_per_second: None,
                messages_per_day: Some(1),
                ..Default::default()
            },
            Some(Quota::default()),
        );
        let now = at(12, 0, 0, 0);
        assert!(quotas.admit(&tenant("a"), 1, now).is_ok());
        assert!(quotas.admit(&tenant("a"), 1, now).is_err());
        assert!(quotas.admit(&tenant("b"), 1, now).is_ok());
        // acme's own quota sets no limit.
        for _ in 0..100 {
            assert!(quotas.admit(&tenant("acme"), 5, now).is_ok());
        }
    }
}
