//! A tenant's consolidation policy (seeds 000 and 004): when a batch of
//! messages is consolidated, which candidates are worth storing, and when a
//! candidate is the same memory seen again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsolidationPolicy {
    /// Consolidate a conversation once this many messages wait (seed 000: 10).
    pub batch_size: usize,
    /// ...or once it has been quiet this long (seconds).
    #[serde(with = "seconds")]
    pub idle_timeout: Duration,
    /// Candidates below this confidence are discarded (and counted).
    pub min_confidence: f32,
    /// A candidate at least this similar (cosine) to an existing memory
    /// reinforces it instead of creating another.
    pub similarity_threshold: f32,
}

impl Default for ConsolidationPolicy {
    fn default() -> Self {
        ConsolidationPolicy {
            batch_size: 10,
            idle_timeout: Duration::from_secs(120),
            min_confidence: 0.6,
            similarity_threshold: 0.9,
        }
    }
}

mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let seconds = f64::deserialize(d)?;
        if !(0.0..=1e9).contains(&seconds) {
            return Err(serde::de::Error::custom("seconds out of range"));
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}
