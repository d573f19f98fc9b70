//! `[pii]`, `[consolidation]` and `[forgetting]`: per-tenant policies, a
//! default and whole-policy overrides per tenant.

use std::collections::BTreeMap;
use std::time::Duration;

use mnemo_domain::consolidation::ConsolidationPolicy;
use mnemo_domain::forgetting::ForgetPolicy;
use mnemo_pii::Policy;
use serde::Deserialize;

use crate::{invalid, ConfigError};

/// A default policy and per-tenant overrides.
#[derive(Debug, Clone, Default)]
pub struct Policies<P> {
    pub default: P,
    pub tenants: BTreeMap<String, P>,
}

impl<P> Policies<P> {
    pub fn for_tenant(&self, tenant: &str) -> &P {
        self.tenants.get(tenant).unwrap_or(&self.default)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPii {
    default: Option<Policy>,
    #[serde(default)]
    tenants: BTreeMap<String, Policy>,
}

#[derive(Debug, Clone)]
pub struct PiiSettings {
    pub default: Policy,
    pub tenants: BTreeMap<String, Policy>,
}

impl PiiSettings {
    pub fn policy_for(&self, tenant: &str) -> &Policy {
        self.tenants.get(tenant).unwrap_or(&self.default)
    }
}

impl RawPii {
    /// Nothing to check: serde refused what a policy cannot hold.
    pub(crate) fn resolve(self) -> PiiSettings {
        PiiSettings {
            default: self.default.unwrap_or_default(),
            tenants: self.tenants,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConsolidation {
    /// Conversations consolidated at once (one subject never on two).
    workers: Option<usize>,
    default: Option<ConsolidationPolicy>,
    #[serde(default)]
    tenants: BTreeMap<String, ConsolidationPolicy>,
}

impl RawConsolidation {
    /// `consolidation.workers` (`MNEMO_CONSOLIDATION_WORKERS`): default two
    /// per core, at most 8.
    pub(crate) fn workers(&self, env: &crate::env::Env) -> Result<Option<usize>, ConfigError> {
        let workers = match env.get("MNEMO_CONSOLIDATION_WORKERS") {
            Some(raw) => Some(raw.parse::<usize>().map_err(|_| {
                invalid(
                    "consolidation.workers (MNEMO_CONSOLIDATION_WORKERS)",
                    "a whole number",
                )
            })?),
            None => self.workers,
        };
        if workers == Some(0) {
            return Err(invalid(
                "consolidation.workers (MNEMO_CONSOLIDATION_WORKERS)",
                "must be at least 1",
            ));
        }
        Ok(workers)
    }

    pub(crate) fn resolve(self) -> Result<Policies<ConsolidationPolicy>, ConfigError> {
        let policies = Policies {
            default: self.default.unwrap_or_default(),
            tenants: self.tenants,
        };
        for policy in std::iter::once(&policies.default).chain(policies.tenants.values()) {
            let fraction = |value: f32| (0.0..=1.0).contains(&value);
            if policy.batch_size == 0
                || !fraction(policy.min_confidence)
                || !fraction(policy.similarity_threshold)
                || !fraction(policy.merge_similarity)
                || !fraction(policy.protected_importance)
                || policy
                    .auto_threshold
                    .is_some_and(|t| !(policy.min_confidence..=1.0).contains(&t))
            {
                return Err(invalid(
                    "consolidation",
                    "batch_size ≥ 1; min_confidence, similarity_threshold, merge_similarity and protected_importance within 0..1; auto_threshold within min_confidence..1",
                ));
            }
        }
        Ok(policies)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawForgetting {
    interval_seconds: Option<f64>,
    default: Option<ForgetPolicy>,
    #[serde(default)]
    tenants: BTreeMap<String, ForgetPolicy>,
}

#[derive(Debug, Clone)]
pub struct ForgettingSettings {
    /// How often the forgetter scores every memory.
    pub interval: Duration,
    pub policies: Policies<ForgetPolicy>,
}

impl RawForgetting {
    pub(crate) fn resolve(self) -> Result<ForgettingSettings, ConfigError> {
        let interval = self.interval_seconds.unwrap_or(3600.0);
        if !(0.01..=1e7).contains(&interval) {
            return Err(invalid(
                "forgetting.interval_seconds",
                "between 0.01 and 1e7",
            ));
        }
        Ok(ForgettingSettings {
            interval: Duration::from_secs_f64(interval),
            policies: Policies {
                default: self.default.unwrap_or_default(),
                tenants: self.tenants,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::load_toml;

    #[test]
    fn a_bad_consolidation_policy_is_refused_naming_the_section() {
        let error = load_toml("[consolidation.tenants.acme]\nmin_confidence = 1.5\n").unwrap_err();
        assert!(error.to_string().contains("consolidation"), "{error}");
        let error = load_toml("[consolidation.default]\nmerge_similarity = -0.1\n").unwrap_err();
        assert!(error.to_string().contains("merge_similarity"), "{error}");
        let settings = load_toml("[consolidation.default]\nmerge_similarity = 0.7\n").unwrap();
        assert_eq!(
            settings.consolidation.for_tenant("any").merge_similarity,
            0.7
        );
    }

    #[test]
    fn a_bad_forgetting_interval_is_refused_naming_the_key() {
        let error = load_toml("[forgetting]\ninterval_seconds = 0\n").unwrap_err();
        assert!(
            error.to_string().contains("forgetting.interval_seconds"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_pii_action_is_refused_naming_its_line() {
        let error = load_toml("[pii.default]\ndefault = \"shred\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("shred") && error.contains("line 2"),
            "{error}"
        );
    }
}
