//! The log's own erasure step besides the key: events stored before tags,
//! session ids and message ids were sealed hold them in plain form, which
//! destroying the key cannot make unreadable. They are redacted in place,
//! the one change the log's triggers accept.

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_domain::events::ErasureStep;
use mnemo_domain::sealed;
use mnemo_domain::{SubjectId, TenantId};
use mnemo_event_store::EventStore;
use serde_json::Value;
use sqlx::{Row, SqlitePool};

use crate::{ErasureTarget, ErasureTargetError};

/// Redacts the subject's legacy plain fields in the event log and in the
/// in-process bus's copies of its events.
pub struct LegacyLogRedaction {
    pub store: Arc<dyn EventStore>,
    /// Whether the log is PostgreSQL, whose UPDATE leaves the old row
    /// version as a dead tuple until vacuum reclaims it: named as residue.
    pub postgres: bool,
    /// The in-process bus's tables (embedded mode): its records are the
    /// log's events as the relay published them, legacy ones with the same
    /// plain fields, so they are redacted alike. `None` on Kafka, whose
    /// records are immutable: there they last until the topic's retention.
    pub bus: Option<SqlitePool>,
}

/// Redacts the subject's legacy records in the in-process bus; returns how
/// many changed.
async fn redact_bus(
    pool: &SqlitePool,
    tenant: &TenantId,
    subject: &SubjectId,
) -> Result<u64, sqlx::Error> {
    let key = format!("{tenant}/{subject}");
    let rows = sqlx::query(
        "SELECT topic, partition, \"offset\", payload FROM bus_records WHERE record_key = ?",
    )
    .bind(&key)
    .fetch_all(pool)
    .await?;
    let mut changed = 0;
    for row in rows {
        let payload: Vec<u8> = row.get("payload");
        let Ok(mut record) = serde_json::from_slice::<Value>(&payload) else {
            continue;
        };
        let event_type = record["event_type"].as_str().unwrap_or_default().to_owned();
        let version = record["schema_version"].as_u64().unwrap_or(u64::MAX);
        let version = u16::try_from(version).unwrap_or(u16::MAX);
        if !sealed::predates_sealing(&event_type, version) {
            continue;
        }
        sealed::redact_formerly_plain(&mut record["payload"]);
        if let Some(metadata) = record["metadata"].as_object_mut() {
            metadata.remove("correlation_id");
        }
        let redacted = serde_json::to_vec(&record).expect("a JSON value serializes");
        if redacted == payload {
            continue;
        }
        sqlx::query(
            "UPDATE bus_records SET payload = ? WHERE topic = ? AND partition = ? AND \"offset\" = ?",
        )
        .bind(redacted)
        .bind(row.get::<String, _>("topic"))
        .bind(row.get::<i64, _>("partition"))
        .bind(row.get::<i64, _>("offset"))
        .execute(pool)
        .await?;
        changed += 1;
    }
    Ok(changed)
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
            .map_err(|e| ErasureTargetError::new("event_log_legacy", e))?;
        let redacted = match &self.bus {
            Some(pool) => {
                redacted
                    + redact_bus(pool, tenant, subject)
                        .await
                        .map_err(|e| ErasureTargetError::new("event_log_legacy", e))?
            }
            None => redacted,
        };
        let note = (self.postgres && redacted > 0).then(|| {
            "the redacted events' earlier row versions stay in the events table's dead tuples \
             until autovacuum reclaims them and new rows overwrite the space; VACUUM events \
             (as the schema owner) hastens it"
                .to_owned()
        });
        Ok(ErasureStep {
            store: "event_log_legacy".to_owned(),
            action: "legacy_fields_redacted".to_owned(),
            count: redacted,
            note,
        })
    }
}
