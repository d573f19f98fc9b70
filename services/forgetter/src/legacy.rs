//! The log's own erasure step besides the key: events stored before tags,
//! session ids and message ids were sealed hold them in plain form, which
//! destroying the key cannot make unreadable. They are redacted in place,
//! the one change the log's triggers accept.

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_domain::events::ErasureStep;
use mnemo_domain::{SubjectId, TenantId};
use mnemo_event_store::EventStore;

use crate::{ErasureTarget, ErasureTargetError};

/// Redacts the subject's legacy plain fields in the event log.
pub struct LegacyLogRedaction {
    pub store: Arc<dyn EventStore>,
    /// Whether the log is PostgreSQL, whose UPDATE leaves the old row
    /// version as a dead tuple until vacuum reclaims it: named as residue.
    pub postgres: bool,
}

#[async_trait]
impl ErasureTarget for LegacyLogRedaction {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, ErasureTargetError> {
        let redacted = self
            .store
            .redact_legacy(tenant, subject)
            .await
            .map_err(|e| ErasureTargetError::new("event_log", e))?;
        let note = (self.postgres && redacted > 0).then(|| {
            "the redacted events' earlier row versions stay in the events table's dead tuples \
             until autovacuum reclaims them and new rows overwrite the space; VACUUM events \
             (as the schema owner) hastens it"
                .to_owned()
        });
        Ok(ErasureStep {
            store: "event_log".to_owned(),
            action: "legacy_fields_redacted".to_owned(),
            count: redacted,
            note,
        })
    }
}
