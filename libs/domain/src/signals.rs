//! Records services exchange on the bus that are not log events: one type
//! per record, used by the side that writes it and the side that reads it,
//! so the wire contract is written once. Each carries a schema version; a
//! reader refuses versions newer than it knows rather than guess.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{MemoryId, SubjectId, TenantId};

/// Why a bus record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error("undecodable {record}: {source}")]
    Undecodable {
        record: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{record} version {version} is newer than this reader's {known}")]
    UnknownVersion {
        record: &'static str,
        version: u32,
        known: u32,
    },
}

impl SignalError {
    pub fn code(&self) -> &'static str {
        match self {
            SignalError::Undecodable { .. } => "signal_undecodable",
            SignalError::UnknownVersion { .. } => "signal_unknown_version",
        }
    }
}

/// The retriever's note that memories were returned by a search or a
/// context call; the forgetter counts them into the usage the retention
/// score reads. Topic `mnemo.access-signals`, keyed `tenant/subject`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessSignal {
    /// Records from before the field existed are version 1.
    #[serde(default = "AccessSignal::first_version")]
    pub version: u32,
    pub tenant: TenantId,
    pub subject: SubjectId,
    pub memory_ids: Vec<MemoryId>,
    pub at: DateTime<Utc>,
}

impl AccessSignal {
    pub const VERSION: u32 = 1;
    const RECORD: &'static str = "access signal";

    fn first_version() -> u32 {
        1
    }

    pub fn new(
        tenant: TenantId,
        subject: SubjectId,
        memory_ids: Vec<MemoryId>,
        at: DateTime<Utc>,
    ) -> Self {
        AccessSignal {
            version: Self::VERSION,
            tenant,
            subject,
            memory_ids,
            at,
        }
    }

    /// The bus record's key: one partition order per subject.
    pub fn key(&self) -> String {
        format!("{}/{}", self.tenant, self.subject)
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an access signal always serialises")
    }

    pub fn decode(payload: &[u8]) -> Result<Self, SignalError> {
        let signal: AccessSignal =
            serde_json::from_slice(payload).map_err(|source| SignalError::Undecodable {
                record: Self::RECORD,
                source,
            })?;
        if signal.version > Self::VERSION {
            return Err(SignalError::UnknownVersion {
                record: Self::RECORD,
                version: signal.version,
                known: Self::VERSION,
            });
        }
        Ok(signal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal() -> AccessSignal {
        AccessSignal::new(
            TenantId::parse("acme").unwrap(),
            SubjectId::parse("ana").unwrap(),
            vec![MemoryId::new(), MemoryId::new()],
            Utc::now(),
        )
    }

    #[test]
    fn a_signal_round_trips_through_its_encoding() {
        let sent = signal();
        assert_eq!(AccessSignal::decode(&sent.encode()).unwrap(), sent);
        assert_eq!(sent.key(), "acme/ana");
    }

    #[test]
    fn a_record_without_a_version_is_version_one() {
        let id = MemoryId::new();
        let legacy = format!(
            r#"{{"tenant":"acme","subject":"ana","memory_ids":["{id}"],"at":"2026-01-01T00:00:00Z"}}"#
        );
        let decoded = AccessSignal::decode(legacy.as_bytes()).unwrap();
        assert_eq!(decoded.version, 1);
        assert_eq!(decoded.memory_ids, vec![id]);
    }

    #[test]
    fn newer_versions_and_garbage_are_refused() {
        let mut newer = signal();
        newer.version = AccessSignal::VERSION + 1;
        let error = AccessSignal::decode(&newer.encode()).unwrap_err();
        assert_eq!(error.code(), "signal_unknown_version");
        let error = AccessSignal::decode(b"{\"tenant\": 3}").unwrap_err();
        assert_eq!(error.code(), "signal_undecodable");
    }
}
