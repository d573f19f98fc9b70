//! The scheduled retention pass: score every active and archived memory of
//! every subject by its tenant's policy, archive or expire what fell below
//! the thresholds, and say why in the memory's history. Then the episode
//! pass: forget the episodes past the tenant's episode time to live or
//! beyond its cap per subject, recorded as `EpisodesForgotten` events the
//! episode projection applies (so a rebuilt index leaves them out too).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use mnemo_config::Policies;
use mnemo_domain::events::{streams, EpisodesForgotten, MemoryStateChanged};
use mnemo_domain::forgetting::{
    decide, decide_episodes, Decision, EpisodeAge, EpisodeDecision, ForgetPolicy, MemoryUsage,
    Verdict,
};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, EventType, MemoryState, SubjectId, SubjectText, TenantId,
};
use mnemo_event_store::sealed::{LogError, Pending, SealedLog};
use mnemo_event_store::{EventStoreError, ExpectedVersion};
use mnemo_read_model::{MemoryFilter, MemoryReadModel};

use crate::usage::UsageStore;

const PAGE: u32 = 500;
/// Log events one page of the episode scan reads.
const LOG_PAGE: u32 = 1_000;
/// Message ids one `EpisodesForgotten` event carries at most, so an event
/// stays far below a Kafka record's size limit (1 MB by default).
const FORGET_CHUNK: usize = 1_000;
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
    /// Searchable episodes the episode pass looked at.
    pub episodes: usize,
    /// Episodes it forgot (or would forget, planned).
    pub episodes_forgotten: usize,
}

/// The episodes a pass would forget, per subject and rule.
#[derive(Debug, Default)]
pub struct EpisodePlan {
    pub decisions: Vec<(TenantId, SubjectId, EpisodeDecision)>,
    /// Subjects with searchable episodes, and how many they hold.
    pub subjects: usize,
    pub episodes: usize,
}

impl EpisodePlan {
    pub fn forgotten(&self) -> usize {
        self.decisions
            .iter()
            .map(|(_, _, d)| d.messages.len())
            .sum()
    }
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
        let episodes = self.forget_episodes(now).await?;
        report.episodes = episodes.episodes;
        report.episodes_forgotten = episodes.forgotten();
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

    /// The episode decisions of a pass at `now`, without applying any.
    ///
    /// Reads the whole log (ids, types and message timestamps, which are
    /// not sealed; no content is opened): the searchable episodes of a
    /// subject are its messages less those already forgotten, and an
    /// erased subject has none. Memory grows with the number of messages
    /// (a few dozen bytes each); a pass over a very large log is a
    /// candidate for an incremental scan.
    pub async fn plan_episodes(&self, now: DateTime<Utc>) -> Result<EpisodePlan, RetentionError> {
        let store = self.log.store();
        let head = store.head_position().await.map_err(LogError::from)?;
        let mut live: BTreeMap<(TenantId, SubjectId), Vec<EpisodeAge>> = BTreeMap::new();
        let mut forgotten: HashSet<EventId> = HashSet::new();
        let mut position = 0;
        while position < head {
            let page = store
                .read_all(position, LOG_PAGE)
                .await
                .map_err(LogError::from)?;
            let Some(last) = page.last() else { break };
            position = last.global_position;
            for event in page {
                let Some(subject) = event.subject.clone() else {
                    continue;
                };
                if event.is(EventType::MessageReceived) {
                    // The timestamp is what the message says of itself (an
                    // import posts old turns late); the append time when
                    // it cannot be read.
                    let timestamp = event
                        .payload
                        .get("timestamp")
                        .and_then(|t| serde_json::from_value(t.clone()).ok())
                        .unwrap_or(event.recorded_at);
                    live.entry((event.tenant, subject))
                        .or_default()
                        .push(EpisodeAge {
                            message: event.event_id,
                            timestamp,
                        });
                } else if event.is(EventType::EpisodesForgotten) {
                    if let DomainEvent::EpisodesForgotten(done) =
                        self.log.decode(event).await?.event
                    {
                        forgotten.extend(done.messages);
                    }
                } else if event.is(EventType::SubjectErased) {
                    // Its points are gone with it; what it says after the
                    // erasure is a new conversation, counted afresh.
                    live.remove(&(event.tenant, subject));
                }
            }
        }
        let mut plan = EpisodePlan::default();
        for ((tenant, subject), mut episodes) in live {
            episodes.retain(|e| !forgotten.contains(&e.message));
            if episodes.is_empty() {
                continue;
            }
            plan.subjects += 1;
            plan.episodes += episodes.len();
            let policy = &self.policies.for_tenant(tenant.as_str()).episodes;
            for decision in decide_episodes(&episodes, policy, now) {
                plan.decisions
                    .push((tenant.clone(), subject.clone(), decision));
            }
        }
        Ok(plan)
    }

    /// Plans and applies the episode pass: one `EpisodesForgotten` event per
    /// subject, rule and chunk, with an id derived from what it forgets, so
    /// a pass repeated after a crash appends nothing twice.
    pub async fn forget_episodes(&self, now: DateTime<Utc>) -> Result<EpisodePlan, RetentionError> {
        let plan = self.plan_episodes(now).await?;
        for (tenant, subject, decision) in &plan.decisions {
            for chunk in decision.messages.chunks(FORGET_CHUNK) {
                let mut key = vec![
                    "episodes-forgotten".to_owned(),
                    tenant.to_string(),
                    subject.to_string(),
                ];
                key.extend(chunk.iter().map(ToString::to_string));
                let key: Vec<&str> = key.iter().map(String::as_str).collect();
                self.log
                    .append_one(
                        tenant,
                        &streams::episodes(subject),
                        ExpectedVersion::Any,
                        Pending {
                            event_id: EventId::derived(&key),
                            subject: Some(subject.clone()),
                            event: DomainEvent::EpisodesForgotten(EpisodesForgotten {
                                rule: decision.rule,
                                messages: chunk.to_vec(),
                                reason: decision.reason.clone(),
                            }),
                            metadata: EventMetadata {
                                actor: "mnemo-forgetter".to_owned(),
                                correlation_id: Some(format!("retention:{}", now.timestamp())),
                                causation_id: None,
                                traceparent: None,
                            },
                        },
                    )
                    .await?;
            }
        }
        if !plan.decisions.is_empty() {
            tracing::info!(
                subjects = plan.subjects,
                episodes = plan.episodes,
                forgotten = plan.forgotten(),
                "episode retention pass"
            );
        }
        Ok(plan)
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
