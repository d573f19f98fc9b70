//! Per-tenant PII scrubbers. Each tenant's pseudonym key is derived from the
//! master key, so pseudonyms are stable within a tenant and unlinkable
//! across tenants, and nothing extra needs storing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mnemo_config::PiiSettings;
use mnemo_crypto::MasterKey;
use mnemo_domain::events::PiiCounts;
use mnemo_domain::TenantId;
use mnemo_pii::{Findings, Scrubber};
use mnemo_telemetry::Metrics;

pub struct Scrubbers {
    settings: PiiSettings,
    master: Arc<MasterKey>,
    cache: Mutex<HashMap<TenantId, Arc<Scrubber>>>,
}

impl Scrubbers {
    pub fn new(settings: PiiSettings, master: Arc<MasterKey>) -> Self {
        Scrubbers {
            settings,
            master,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn for_tenant(&self, tenant: &TenantId) -> Arc<Scrubber> {
        let mut cache = self.cache.lock().expect("scrubber cache lock");
        cache
            .entry(tenant.clone())
            .or_insert_with(|| {
                let key = self
                    .master
                    .derive(b"mnemo/pii-pseudonym", tenant.as_str().as_bytes());
                Arc::new(Scrubber::new(
                    self.settings.policy_for(tenant.as_str()).clone(),
                    key,
                ))
            })
            .clone()
    }
}

/// Scrubbed text plus counts, accumulated over the fields of one event.
pub struct ScrubSession<'a> {
    scrubber: Arc<Scrubber>,
    metrics: &'a Metrics,
    pub findings: Findings,
}

impl<'a> ScrubSession<'a> {
    pub fn new(scrubbers: &Scrubbers, tenant: &TenantId, metrics: &'a Metrics) -> Self {
        ScrubSession {
            scrubber: scrubbers.for_tenant(tenant),
            metrics,
            findings: Findings::default(),
        }
    }

    pub fn scrub(&mut self, text: &str) -> String {
        let scrubbed = self.scrubber.scrub(text);
        self.findings.merge(&scrubbed.findings);
        scrubbed.text
    }

    /// The counts for the event (never values), also added to the metrics.
    pub fn finish(self) -> PiiCounts {
        let counts = self.findings.to_codes();
        for (kind, count) in &counts {
            self.metrics
                .pii_findings_total
                .with_label_values(&[kind])
                .inc_by(u64::from(*count));
        }
        counts
    }
}
