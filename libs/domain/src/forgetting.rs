//! Forgetting (seed 003): each active memory's retention score decays with
//! idle time and grows with use; below one threshold it is archived (it
//! leaves the hot index but stays findable), below another it expires.
//!
//! `score = importance · 0.5^(idle / half_life) · (1 + ln(1 + accesses))`
//! where idle is the time since the memory was last used or changed.
//!
//! Episodes (what was said, one per message) are forgotten by their own
//! rules ([`EpisodePolicy`]): a time to live and a cap per subject. They
//! have no score: an episode is never "used" the way a memory is, and its
//! decay is the recency term of ranking, which weighs each hit by its
//! message's age. A forgotten episode leaves retrieval; its message stays
//! in the log as history, as an expired memory's versions do.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ids::{EventId, MemoryId, SubjectId};
use crate::memory::{MemoryKind, MemoryState};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A tenant's forgetting policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForgetPolicy {
    /// Idle time after which the score halves.
    #[serde(with = "seconds")]
    pub half_life: Duration,
    /// Below this score an active memory is archived.
    pub archive_below: f64,
    /// Below this score a memory (active or archived) expires: deleted with the reason.
    pub expire_below: f64,
    /// Memories younger than this are never touched by the score.
    #[serde(with = "seconds")]
    pub min_age: Duration,
    /// Hard time-to-live per kind, whatever the score (e.g. `status` = 30 days).
    #[serde(with = "seconds_map")]
    pub ttl: BTreeMap<MemoryKind, Duration>,
    /// At most this many active memories per subject; the lowest-scoring
    /// beyond it are archived.
    pub max_active_per_subject: Option<usize>,
    /// How episodes are forgotten, separately from memories.
    pub episodes: EpisodePolicy,
}

/// A tenant's rules for forgetting episodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EpisodePolicy {
    /// Episodes whose message is older than this (by the message's own
    /// timestamp) leave retrieval. `None`: kept until erased or capped.
    #[serde(with = "optional_seconds", skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Duration>,
    /// At most this many episodes per subject stay searchable; the oldest
    /// beyond it are forgotten.
    pub max_per_subject: Option<usize>,
}

impl Default for EpisodePolicy {
    /// No time to live (what was said stays recallable, decaying in
    /// ranking), and a cap that bounds one subject's share of the index.
    fn default() -> Self {
        EpisodePolicy {
            ttl: None,
            max_per_subject: Some(100_000),
        }
    }
}

/// One searchable episode as the forgetter sees it: its message's event id
/// and timestamp, nothing of what was said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpisodeAge {
    pub message: EventId,
    pub timestamp: DateTime<Utc>,
}

/// Why episodes were forgotten; one event per rule and subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeRule {
    Ttl,
    Cap,
}

/// The episodes of one subject a pass forgets, by rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeDecision {
    pub rule: EpisodeRule,
    pub messages: Vec<EventId>,
    /// Why, in words an admin reads in the audit log.
    pub reason: String,
}

/// Decides which of a subject's searchable episodes (`live`, in log order)
/// to forget: those past the time to live, then the oldest beyond the cap
/// among the rest.
pub fn decide_episodes(
    live: &[EpisodeAge],
    policy: &EpisodePolicy,
    now: DateTime<Utc>,
) -> Vec<EpisodeDecision> {
    let mut decisions = Vec::new();
    let mut kept: Vec<&EpisodeAge> = live.iter().collect();
    if let Some(ttl) = policy.ttl {
        let cutoff = now - chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX);
        let (expired, young): (Vec<_>, Vec<_>) =
            kept.into_iter().partition(|e| e.timestamp < cutoff);
        kept = young;
        if !expired.is_empty() {
            decisions.push(EpisodeDecision {
                rule: EpisodeRule::Ttl,
                messages: expired.iter().map(|e| e.message).collect(),
                reason: format!(
                    "episodes live {} s at most; these were said before {}",
                    ttl.as_secs(),
                    cutoff.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            });
        }
    }
    if let Some(cap) = policy.max_per_subject {
        if kept.len() > cap {
            // Newest first by what the message says; log order breaks ties
            // (a stable sort keeps it), so a replayed pass decides the same.
            kept.sort_by_key(|e| std::cmp::Reverse(e.timestamp));
            let mut over: Vec<&EpisodeAge> = kept.split_off(cap);
            over.sort_by_key(|e| e.timestamp);
            decisions.push(EpisodeDecision {
                rule: EpisodeRule::Cap,
                messages: over.iter().map(|e| e.message).collect(),
                reason: format!(
                    "the subject has more than {cap} episodes and these are the oldest"
                ),
            });
        }
    }
    decisions
}

impl Default for ForgetPolicy {
    fn default() -> Self {
        let day = 86_400;
        ForgetPolicy {
            half_life: Duration::from_secs(30 * day),
            archive_below: 0.05,
            expire_below: 0.005,
            min_age: Duration::from_secs(7 * day),
            ttl: BTreeMap::from([(MemoryKind::Status, Duration::from_secs(90 * day))]),
            max_active_per_subject: Some(2_000),
            episodes: EpisodePolicy::default(),
        }
    }
}

mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs(u64::deserialize(d)?))
    }
}

mod optional_seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_secs))
    }
}

mod seconds_map {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use crate::memory::MemoryKind;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(
        map: &BTreeMap<MemoryKind, Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        map.iter()
            .map(|(k, v)| (*k, v.as_secs()))
            .collect::<BTreeMap<_, _>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<MemoryKind, Duration>, D::Error> {
        let raw = BTreeMap::<MemoryKind, u64>::deserialize(d)?;
        Ok(raw
            .into_iter()
            .map(|(k, v)| (k, Duration::from_secs(v)))
            .collect())
    }
}

/// What the forgetter knows about one memory.
#[derive(Debug, Clone)]
pub struct MemoryUsage {
    pub id: MemoryId,
    pub subject: SubjectId,
    pub kind: MemoryKind,
    pub state: MemoryState,
    pub importance: f32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_accessed_at: Option<DateTime<Utc>>,
    pub accesses: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Keep,
    Archive,
    Expire,
}

#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub memory_id: MemoryId,
    pub subject: SubjectId,
    pub verdict: Verdict,
    pub score: f64,
    /// Why, in words an admin reads in the memory's history.
    pub reason: String,
}

pub fn score(memory: &MemoryUsage, policy: &ForgetPolicy, now: DateTime<Utc>) -> f64 {
    let last_used = memory
        .last_accessed_at
        .map_or(memory.updated_at, |at| at.max(memory.updated_at));
    let idle = (now - last_used).num_milliseconds().max(0) as f64 / 1000.0;
    let half_life = policy.half_life.as_secs_f64().max(1e-3);
    f64::from(memory.importance)
        * 0.5f64.powf(idle / half_life)
        * (1.0 + (1.0 + memory.accesses as f64).ln())
}

/// Decides for one subject's memories (active and archived). Deleted and
/// superseded memories are left alone: they are history already.
pub fn decide(
    memories: &[MemoryUsage],
    policy: &ForgetPolicy,
    now: DateTime<Utc>,
) -> Vec<Decision> {
    let mut decisions = Vec::new();
    let mut active_kept: Vec<(f64, usize)> = Vec::new();
    for (index, memory) in memories.iter().enumerate() {
        if !matches!(memory.state, MemoryState::Active | MemoryState::Archived) {
            continue;
        }
        let age = (now - memory.created_at).to_std().unwrap_or_default();
        let value = score(memory, policy, now);
        let decision = |verdict, reason: String| Decision {
            memory_id: memory.id,
            subject: memory.subject.clone(),
            verdict,
            score: value,
            reason,
        };
        if let Some(ttl) = policy.ttl.get(&memory.kind) {
            if age >= *ttl {
                decisions.push(decision(
                    Verdict::Expire,
                    format!(
                        "{} memories live {} s at most; this one is {} s old",
                        memory.kind.as_str(),
                        ttl.as_secs(),
                        age.as_secs()
                    ),
                ));
                continue;
            }
        }
        if age < policy.min_age {
            if memory.state == MemoryState::Active {
                active_kept.push((value, index));
            }
            continue;
        }
        if value < policy.expire_below {
            decisions.push(decision(
                Verdict::Expire,
                format!(
                    "retention score {value:.4} fell below the expiry threshold {}",
                    policy.expire_below
                ),
            ));
        } else if memory.state == MemoryState::Active && value < policy.archive_below {
            decisions.push(decision(
                Verdict::Archive,
                format!(
                    "retention score {value:.4} fell below the archive threshold {}",
                    policy.archive_below
                ),
            ));
        } else if memory.state == MemoryState::Active {
            active_kept.push((value, index));
        }
    }
    if let Some(cap) = policy.max_active_per_subject {
        if active_kept.len() > cap {
            active_kept.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (value, index) in active_kept.drain(cap..) {
                let memory = &memories[index];
                decisions.push(Decision {
                    memory_id: memory.id,
                    subject: memory.subject.clone(),
                    verdict: Verdict::Archive,
                    score: value,
                    reason: format!("the subject has more than {cap} active memories and this one scores lowest"),
                });
            }
        }
    }
    decisions
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration as ChronoDuration;

    fn usage(importance: f32, days_idle: i64, accesses: u64) -> MemoryUsage {
        let now = Utc::now();
        MemoryUsage {
            id: MemoryId::new(),
            subject: SubjectId::parse("s").unwrap(),
            kind: MemoryKind::Fact,
            state: MemoryState::Active,
            importance,
            created_at: now - ChronoDuration::days(days_idle + 30),
            updated_at: now - ChronoDuration::days(days_idle),
            last_accessed_at: None,
            accesses,
        }
    }

    #[test]
    fn the_score_follows_the_formula() {
        let policy = ForgetPolicy::default();
        let now = Utc::now();
        let fresh = usage(0.8, 0, 0);
        assert!((score(&fresh, &policy, now) - 0.8).abs() < 1e-3);
        let one_half_life = usage(0.8, 30, 0);
        assert!((score(&one_half_life, &policy, now) - 0.4).abs() < 1e-3);
        let used = usage(0.8, 0, 3);
        assert!((score(&used, &policy, now) - 0.8 * (1.0 + 4f64.ln())).abs() < 1e-3);
    }

    #[test]
    fn archives_then_expires_as_the_score_falls_and_spares_the_young() {
        let policy = ForgetPolicy::default();
        let now = Utc::now();
        let memories = vec![usage(0.9, 1, 0), usage(0.3, 150, 0), usage(0.3, 400, 0)];
        let decisions = decide(&memories, &policy, now);
        assert_eq!(decisions.len(), 2, "{decisions:?}");
        assert_eq!(decisions[0].verdict, Verdict::Archive);
        assert_eq!(decisions[0].memory_id, memories[1].id);
        assert_eq!(decisions[1].verdict, Verdict::Expire);
        assert!(decisions[0].reason.contains("archive threshold"));

        let mut young = usage(0.3, 400, 0);
        young.created_at = now - ChronoDuration::days(1);
        assert!(
            decide(&[young], &policy, now).is_empty(),
            "min_age protects it"
        );
    }

    #[test]
    fn ttl_per_kind_and_cap_per_subject() {
        let mut policy = ForgetPolicy {
            max_active_per_subject: Some(1),
            ..ForgetPolicy::default()
        };
        policy.ttl.insert(
            MemoryKind::Fact,
            std::time::Duration::from_secs(86_400 * 10),
        );
        let now = Utc::now();
        let expired = usage(0.9, 0, 0);
        let decisions = decide(&[expired], &policy, now);
        assert_eq!(decisions[0].verdict, Verdict::Expire);
        assert!(decisions[0].reason.contains("at most"));

        policy.ttl.clear();
        let strong = usage(0.9, 0, 5);
        let weak = usage(0.5, 0, 0);
        let decisions = decide(&[strong, weak.clone()], &policy, now);
        assert_eq!(decisions.len(), 1);
        assert_eq!(decisions[0].memory_id, weak.id);
        assert_eq!(decisions[0].verdict, Verdict::Archive);
    }

    #[test]
    fn policies_read_from_toml_seconds() {
        let policy: ForgetPolicy =
            toml::from_str("half_life = 60\narchive_below = 0.2\n[ttl]\nstatus = 10\n").unwrap();
        assert_eq!(policy.half_life, Duration::from_secs(60));
        assert_eq!(policy.ttl[&MemoryKind::Status], Duration::from_secs(10));
        assert_eq!(policy.min_age, ForgetPolicy::default().min_age);
    }

    fn said(days_ago: i64, now: DateTime<Utc>) -> EpisodeAge {
        EpisodeAge {
            message: EventId::new(),
            timestamp: now - ChronoDuration::days(days_ago),
        }
    }

    #[test]
    fn episodes_past_their_ttl_are_forgotten_and_the_rest_kept() {
        let now = Utc::now();
        let live = vec![said(400, now), said(10, now), said(31, now), said(0, now)];
        let policy = EpisodePolicy {
            ttl: Some(Duration::from_secs(30 * 86_400)),
            max_per_subject: None,
        };
        let decisions = decide_episodes(&live, &policy, now);
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(decisions[0].rule, EpisodeRule::Ttl);
        assert_eq!(
            decisions[0].messages,
            vec![live[0].message, live[2].message]
        );
        assert!(
            decisions[0].reason.contains("2592000 s"),
            "{}",
            decisions[0].reason
        );
    }

    #[test]
    fn the_cap_forgets_the_oldest_by_message_time_after_the_ttl() {
        let now = Utc::now();
        // Log order is not time order: an import can post old turns late.
        let live = vec![
            said(5, now),
            said(1, now),
            said(90, now),
            said(3, now),
            said(2, now),
        ];
        let policy = EpisodePolicy {
            ttl: Some(Duration::from_secs(60 * 86_400)),
            max_per_subject: Some(2),
        };
        let decisions = decide_episodes(&live, &policy, now);
        assert_eq!(decisions.len(), 2, "{decisions:?}");
        assert_eq!(decisions[0].messages, vec![live[2].message]);
        assert_eq!(decisions[1].rule, EpisodeRule::Cap);
        // Oldest first: 5 days, then 3 days; the two newest stay.
        assert_eq!(
            decisions[1].messages,
            vec![live[0].message, live[3].message]
        );
        assert!(decide_episodes(&live[..2], &policy, now).is_empty());
    }

    #[test]
    fn the_default_episode_policy_keeps_everything_under_the_cap() {
        let now = Utc::now();
        let live: Vec<_> = (0..50).map(|d| said(d * 100, now)).collect();
        assert!(decide_episodes(&live, &EpisodePolicy::default(), now).is_empty());
        let policy: ForgetPolicy =
            serde_json::from_str(r#"{"episodes": {"ttl": 60, "max_per_subject": 3}}"#).unwrap();
        assert_eq!(policy.episodes.ttl, Some(Duration::from_secs(60)));
        assert_eq!(policy.episodes.max_per_subject, Some(3));
        assert_eq!(policy.half_life, ForgetPolicy::default().half_life);
    }
}
