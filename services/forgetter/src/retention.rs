//! The scheduled retention pass: score every active and archived memory of
//! every subject by its tenant's policy, archive or expire what fell below
//! the thresholds, and say why in the memory's history.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use mnemo_config::Policies;
use mnemo_domain::events::{streams, MemoryStateChanged};
use mnemo_domain::forgetting::{decide, Decision, ForgetPolicy, MemoryUsage, Verdict};
use mnemo_domain::{DomainEvent, EventId, EventMetadata, MemoryState, SubjectText};
use mnemo_event_store::sealed::{LogError, Pending, SealedLog};
use mnemo_event_store::{EventStoreError, ExpectedVersion};
use mnemo_read_model::{MemoryFilter, MemoryReadModel};

use crate::usage::UsageStore;

const PAGE: u32 = 500;
/// The most memories of one subject the pass reads at once.
const MAX_PER_SUBJECT: u32 = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    #[error("read model: {0}")]
    ReadModel(#[from] mnemo_read_model::ReadModelError),
    #[error("usage: {0}")]
    Usage(#[from] crate::usage::UsageError),
    #[error("log: {0}")]
    Log(#[from] LogError),
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassReport {
    pub subjects: usize,
    pub memories: usize,
    pub archived: usize,
    pub expired: usize,
    /// Decisions skipped because the memory changed meanwhile.
    pub skipped: usize,
}

pub struct Retention {
    pub log: SealedLog,
    pub read_model: Arc<dyn MemoryReadModel>,
    pub usage: Arc<dyn UsageStore>,
    pub policies: Arc<Policies<ForgetPolicy>>,
}

impl Retention {
    /// Every decision of a pass at `now`, without applying any.
    pub async fn plan(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(Vec<(mnemo_domain::TenantId, Decision, u64)>, PassReport), RetentionError> {
        let mut plan = Vec::new();
        let mut report = PassReport::default();
        let mut after = None;
        loop {
            let subjects = self.read_model.subjects(after.clone(), PAGE).await?;
            let Some(last) = subjects.last().cloned() else {
                break;
            };
            for (tenant, subject) in subjects {
                report.subjects += 1;
                let memories = self
                    .read_model
                    .list(
                        &tenant,
                        &subject,
                        &MemoryFilter {
                            states: vec![MemoryState::Active, MemoryState::Archived],
                            limit: MAX_PER_SUBJECT,
                            ..Default::default()
                        },
                    )
                    .await?;
                report.memories += memories.len();
                let usage = self.usage.get(&tenant, &subject).await?;
                let usages: Vec<MemoryUsage> = memories
                    .iter()
                    .map(|m| {
                        let used = usage.get(&m.id);
                        MemoryUsage {
                            id: m.id,
                            subject: m.subject.clone(),
                            kind: m.kind,
                            state: m.state,
                            importance: m.importance,
                            created_at: m.created_at,
                            updated_at: m.updated_at,
                            last_accessed_at: used.map(|u| u.last_accessed_at),
                            accesses: used.map_or(0, |u| u.accesses),
                        }
                    })
                    .collect();
                let policy = self.policies.for_tenant(tenant.as_str());
                for decision in decide(&usages, policy, now) {
                    let version = memories
                        .iter()
                        .find(|m| m.id == decision.memory_id)
                        .map_or(0, |m| m.version);
                    plan.push((tenant.clone(), decision, version));
                }
            }
            after = Some(last);
        }
        Ok((plan, report))
    }

    /// Plans and applies a pass. Each change is appended against the version
    /// the decision was made on, so a memory edited meanwhile is left alone
    /// until the next pass; event ids are derived from the memory and its
    /// version, so a repeated pass appends nothing twice.
    pub async fn run(&self, now: DateTime<Utc>) -> Result<PassReport, RetentionError> {
        let (plan, mut report) = self.plan(now).await?;
        for (tenant, decision, version) in plan {
            let (event, verb) = match decision.verdict {
                Verdict::Keep => continue,
                Verdict::Archive => (
                    DomainEvent::MemoryArchived(MemoryStateChanged {
                        reason: Some(SubjectText::new(decision.reason.clone())),
                    }),
                    "archive",
                ),
                Verdict::Expire => (
                    DomainEvent::MemoryDeleted(MemoryStateChanged {
                        reason: Some(SubjectText::new(decision.reason.clone())),
                    }),
                    "expire",
                ),
            };
            let event_id = EventId::derived(&[
                "retention",
                verb,
                &decision.memory_id.to_string(),
                &version.to_string(),
            ]);
            let appended = self
                .log
                .append_one(
                    &tenant,
                    &streams::memory(&decision.memory_id),
                    ExpectedVersion::Exact(version),
                    Pending {
                        event_id,
                        subject: Some(decision.subject.clone()),
                        event,
                        metadata: EventMetadata {
                            actor: "mnemo-forgetter".to_owned(),
                            correlation_id: Some(format!("retention:{}", now.timestamp())),
                            causation_id: None,
                            traceparent: None,
                        },
                    },
                )
                .await;
            match appended {
                Ok(_) => match decision.verdict {
                    Verdict::Archive => report.archived += 1,
                    Verdict::Expire => report.expired += 1,
                    Verdict::Keep => {}
                },
                Err(LogError::Store(EventStoreError::Conflict { .. })) => report.skipped += 1,
                Err(other) => return Err(other.into()),
            }
        }
        if report.archived + report.expired > 0 {
            tracing::info!(
                subjects = report.subjects,
                memories = report.memories,
                archived = report.archived,
                expired = report.expired,
                "retention pass"
            );
        }
        Ok(report)
    }

    /// Runs a pass every `interval`, forever.
    pub async fn run_every(self: Arc<Self>, interval: std::time::Duration) {
        loop {
            tokio::time::sleep(interval).await;
            if let Err(error) = self.run(Utc::now()).await {
                tracing::warn!(error = %error, "retention pass failed");
            }
        }
    }
}
