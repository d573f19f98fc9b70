//! `[backlog]` and `[quotas]`: how much the pipeline takes on, and when it
//! says it is behind.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::policies::Policies;
use crate::{invalid, ConfigError};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBacklog {
    degraded_records: Option<u64>,
    degraded_seconds: Option<u64>,
    ceiling_messages: Option<u64>,
    slowdown_seconds: Option<f64>,
    min_free_disk_bytes: Option<u64>,
}

/// Free space the data dir's file system keeps by default: room for the
/// WAL to be checkpointed and for the index to rebuild a segment beside
/// the old one, both of which need space before they free any.
pub const DEFAULT_MIN_FREE_DISK_BYTES: u64 = 1 << 30;

/// When `/readyz` says `degraded` and when ingest stops accepting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BacklogSettings {
    /// A consumer group's uncommitted records, or messages accepted but
    /// not consolidated, past which the process is `degraded`.
    pub degraded_records: u64,
    /// The age of the oldest buffered message past which it is `degraded`
    /// (it includes the idle wait, so keep it above the idle timeouts).
    pub degraded_age: Duration,
    /// Messages accepted but not consolidated past which ingest answers 503
    /// with `Retry-After` before appending anything.
    pub ceiling_messages: u64,
    /// How long the consolidator's oldest unread message may have waited
    /// before ingest paces new messages to the rate consolidation sustains
    /// (None, from `slowdown_seconds = 0`: never paced).
    pub slowdown: Option<Duration>,
    /// Free bytes the data dir's file system must keep: below, the process
    /// is `degraded` and ingest refuses new content with 507 before it
    /// appends (0: never).
    pub min_free_disk_bytes: u64,
}

impl RawBacklog {
    pub(crate) fn resolve(self) -> Result<BacklogSettings, ConfigError> {
        let settings = BacklogSettings {
            degraded_records: self.degraded_records.unwrap_or(50_000),
            degraded_age: Duration::from_secs(self.degraded_seconds.unwrap_or(600)),
            ceiling_messages: self.ceiling_messages.unwrap_or(1_000_000),
            slowdown: match self.slowdown_seconds.unwrap_or(2.0) {
                0.0 => None,
                seconds if seconds.is_finite() && seconds > 0.0 => {
                    Some(Duration::from_secs_f64(seconds))
                }
                _ => {
                    return Err(invalid(
                        "backlog.slowdown_seconds",
                        "must be a number of seconds, 0 to never pace ingest",
                    ))
                }
            },
            min_free_disk_bytes: self
                .min_free_disk_bytes
                .unwrap_or(DEFAULT_MIN_FREE_DISK_BYTES),
        };
        if settings.degraded_records == 0
            || settings.degraded_age.is_zero()
            || settings.ceiling_messages == 0
        {
            return Err(invalid("backlog", "every limit must be greater than zero"));
        }
        Ok(settings)
    }
}

/// One tenant's quota; an absent limit is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// Ingest requests per second (a token bucket with a burst of one
    /// second's worth).
    pub requests_per_second: Option<u32>,
    /// Messages accepted per UTC day.
    pub messages_per_day: Option<u64>,
    /// Active memories one subject may have: a direct memory write past
    /// it is refused (consolidation and the forgetter are not limited).
    pub memories_per_subject: Option<u64>,
    /// Bytes the tenant's events may take in the log; past it, messages
    /// and memory writes are refused (corrections that delete, erasure
    /// and export never are).
    pub storage_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuotas {
    default: Option<Quota>,
    #[serde(default)]
    tenants: BTreeMap<String, Quota>,
}

impl RawQuotas {
    pub(crate) fn resolve(self) -> Result<Policies<Quota>, ConfigError> {
        let quotas = Policies {
            default: self.default.unwrap_or_default(),
            tenants: self.tenants,
        };
        for quota in std::iter::once(&quotas.default).chain(quotas.tenants.values()) {
            if quota.requests_per_second == Some(0)
                || quota.messages_per_day == Some(0)
                || quota.memories_per_subject == Some(0)
                || quota.storage_bytes == Some(0)
            {
                return Err(invalid(
                    "quotas",
                    "a limit must be greater than zero (leave it out for none)",
                ));
            }
        }
        Ok(quotas)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::testing::load_toml;

    #[test]
    fn backlog_limits_have_defaults_and_refuse_zero() {
        let settings = load_toml("").unwrap();
        assert_eq!(settings.backlog.degraded_records, 50_000);
        assert_eq!(settings.backlog.degraded_age, Duration::from_secs(600));
        let set = load_toml("[backlog]\nceiling_messages = 10\ndegraded_seconds = 5\n").unwrap();
        assert_eq!(set.backlog.ceiling_messages, 10);
        assert_eq!(set.backlog.degraded_age, Duration::from_secs(5));
        let error = load_toml("[backlog]\nceiling_messages = 0\n").unwrap_err();
        assert!(error.to_string().contains("backlog"), "{error}");
    }

    #[test]
    fn the_free_disk_floor_defaults_to_a_gibibyte_and_zero_turns_it_off() {
        let settings = load_toml("").unwrap();
        assert_eq!(settings.backlog.min_free_disk_bytes, 1 << 30);
        let off = load_toml("[backlog]\nmin_free_disk_bytes = 0\n").unwrap();
        assert_eq!(off.backlog.min_free_disk_bytes, 0);
        let set = load_toml("[backlog]\nmin_free_disk_bytes = 5000000000\n").unwrap();
        assert_eq!(set.backlog.min_free_disk_bytes, 5_000_000_000);
    }

    #[test]
    fn ingest_is_paced_past_two_seconds_unless_slowdown_is_zero() {
        let settings = load_toml("").unwrap();
        assert_eq!(settings.backlog.slowdown, Some(Duration::from_secs(2)));
        let set = load_toml("[backlog]\nslowdown_seconds = 0.5\n").unwrap();
        assert_eq!(set.backlog.slowdown, Some(Duration::from_millis(500)));
        let off = load_toml("[backlog]\nslowdown_seconds = 0\n").unwrap();
        assert_eq!(off.backlog.slowdown, None);
        let error = load_toml("[backlog]\nslowdown_seconds = -1\n").unwrap_err();
        assert!(error.to_string().contains("slowdown_seconds"), "{error}");
    }

    #[test]
    fn quotas_apply_per_tenant_over_the_default() {
        let settings = load_toml(
            "[quotas.default]\nrequests_per_second = 100\n\
             [quotas.tenants.acme]\nmessages_per_day = 5\n",
        )
        .unwrap();
        let default = settings.quotas.for_tenant("other");
        assert_eq!(default.requests_per_second, Some(100));
        assert_eq!(default.messages_per_day, None);
        // A tenant's quota replaces the default whole, like every policy.
        let acme = settings.quotas.for_tenant("acme");
        assert_eq!(acme.requests_per_second, None);
        assert_eq!(acme.messages_per_day, Some(5));
        let error = load_toml("[quotas.default]\nmessages_per_day = 0\n").unwrap_err();
        assert!(error.to_string().contains("quotas"), "{error}");
        let sized = load_toml(
            "[quotas.tenants.acme]\nmemories_per_subject = 500\nstorage_bytes = 1000000\n",
        )
        .unwrap();
        let acme = sized.quotas.for_tenant("acme");
        assert_eq!(acme.memories_per_subject, Some(500));
        assert_eq!(acme.storage_bytes, Some(1_000_000));
        let error = load_toml("[quotas.default]\nstorage_bytes = 0\n").unwrap_err();
        assert!(error.to_string().contains("quotas"), "{error}");
    }
}
