//! The stores an erasure deletes a subject from, besides the log and the
//! bus (whose copies are shredded with the key): the vector index, the
//! consolidator's buffer and the usage counts, and the memory read model.
//! The executor runs them in the order `mnemo-app` registers them; the read
//! model goes last because on SQLite it also truncates the write-ahead log,
//! which must come after every delete that wrote pages into it.

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_consolidator::buffer::MessageBuffer;
use mnemo_domain::events::ErasureStep;
use mnemo_domain::{SubjectId, TenantId};
use mnemo_read_model::MemoryReadModel;
use mnemo_vector_index::{Purge, VectorIndex};
use sqlx::SqlitePool;

use crate::usage::UsageStore;
use crate::{ErasureTarget, ErasureTargetError};

/// The subject's points in the vector index: deleted, then purged from
/// the disk (the embedded index rewrites itself without them; a Qdrant
/// server cannot be made to, and the step names what it keeps).
///
/// The purge runs even when no point was deleted now: a retried erasure
/// may have deleted them before a crash, and points of the subject's
/// memories deleted earlier one by one left their bytes too.
pub struct VectorIndexErasure(pub Arc<dyn VectorIndex>);

#[async_trait]
impl ErasureTarget for VectorIndexErasure {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, ErasureTargetError> {
        let failed = |e| ErasureTargetError::new("vector_index", e);
        let deleted = self
            .0
            .delete_subject(tenant, subject)
            .await
            .map_err(failed)?;
        let step = match self.0.purge_deleted().await.map_err(failed)? {
            Purge::Purged { .. } => ErasureStep {
                store: "vector_index".to_owned(),
                action: "points_purged".to_owned(),
                count: deleted,
                note: None,
            },
            Purge::Residue { note } => ErasureStep {
                store: "vector_index".to_owned(),
                action: "points_deleted".to_owned(),
                count: deleted,
                note: Some(format!("the points are out of every query; {note}")),
            },
        };
        Ok(step)
    }
}

/// The consolidator's buffered message ids and the usage counts of the
/// subject's memories: one receipt step, as both are pipeline state.
pub struct PipelineStateErasure {
    pub buffer: Arc<dyn MessageBuffer>,
    pub usage: Arc<dyn UsageStore>,
}

#[async_trait]
impl ErasureTarget for PipelineStateErasure {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, ErasureTargetError> {
        let buffered = self
            .buffer
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| ErasureTargetError::new("pipeline_state", e))?;
        let usage = self
            .usage
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| ErasureTargetError::new("pipeline_state", e))?;
        Ok(ErasureStep {
            store: "pipeline_state".to_owned(),
            action: "rows_deleted".to_owned(),
            count: buffered + usage,
            note: None,
        })
    }
}

/// The subject's rows in the read model. On SQLite it then empties the
/// write-ahead log so no copy of the deleted pages survives in it; on
/// PostgreSQL the rows' bytes leave the disk with vacuum (docs/postgres.md).
pub struct ReadModelErasure {
    pub read_model: Arc<dyn MemoryReadModel>,
    /// The SQLite database the read model lives in, when it does.
    pub sqlite: Option<SqlitePool>,
}

#[async_trait]
impl ErasureTarget for ReadModelErasure {
    async fn erase_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<ErasureStep, ErasureTargetError> {
        let deleted = self
            .read_model
            .delete_subject(tenant, subject)
            .await
            .map_err(|e| ErasureTargetError::new("memory_read_model", e))?;
        if let Some(pool) = &self.sqlite {
            mnemo_event_store::sqlite::checkpoint_truncate(pool)
                .await
                .map_err(|e| ErasureTargetError::new("memory_read_model", e))?;
        }
        Ok(ErasureStep {
            store: "memory_read_model".to_owned(),
            action: "rows_deleted".to_owned(),
            count: deleted,
            note: None,
        })
    }
}
