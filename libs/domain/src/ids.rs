//! Validated identifiers. Wire strings become these once, at the edge; nothing
//! downstream re-checks them.
//!
//! Name-like ids (tenant, subject, session, agent) are opaque, pseudonymous
//! handles: ASCII letters, digits and `. _ : -`, 1 to 128 characters. `@` and
//! spaces are refused on purpose so that an e-mail address or a person's name
//! cannot become an id and leak into logs, topic keys and metrics.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// Longest accepted name-like id, in bytes.
pub const MAX_ID_LEN: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{kind} must not be empty")]
    Empty { kind: &'static str },
    #[error("{kind} is longer than {max} characters")]
    TooLong { kind: &'static str, max: usize },
    #[error("{kind} may only contain ASCII letters, digits and . _ : -")]
    InvalidCharacter { kind: &'static str },
    #[error("{kind} must start with a letter or a digit")]
    InvalidStart { kind: &'static str },
    #[error("{kind} is not a valid UUID")]
    NotAUuid { kind: &'static str },
}

impl crate::Classified for IdError {
    fn class(&self) -> crate::ErrorClass {
        crate::ErrorClass::Malformed
    }

    fn code(&self) -> &'static str {
        "invalid_id"
    }
}

impl IdError {
    /// Which id failed: `tenant_id`, `subject_id`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            IdError::Empty { kind }
            | IdError::TooLong { kind, .. }
            | IdError::InvalidCharacter { kind }
            | IdError::InvalidStart { kind }
            | IdError::NotAUuid { kind } => kind,
        }
    }
}

fn check_name(kind: &'static str, raw: &str) -> Result<(), IdError> {
    if raw.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if raw.len() > MAX_ID_LEN {
        return Err(IdError::TooLong {
            kind,
            max: MAX_ID_LEN,
        });
    }
    if !raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    {
        return Err(IdError::InvalidCharacter { kind });
    }
    if !raw.as_bytes()[0].is_ascii_alphanumeric() {
        return Err(IdError::InvalidStart { kind });
    }
    Ok(())
}

macro_rules! name_id {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            pub fn parse(raw: impl Into<String>) -> Result<Self, IdError> {
                let raw = raw.into();
                check_name($kind, &raw)?;
                Ok(Self(raw))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                Self::parse(raw).map_err(serde::de::Error::custom)
            }
        }
    };
}

macro_rules! uuid_id {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Uuid);

        impl $name {
            /// A new, time-ordered id (UUIDv7).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            pub fn parse(raw: &str) -> Result<Self, IdError> {
                Uuid::parse_str(raw)
                    .map(Self)
                    .map_err(|_| IdError::NotAUuid { kind: $kind })
            }

            pub fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                Self::parse(&raw).map_err(serde::de::Error::custom)
            }
        }
    };
}

name_id!(
    /// A customer of the platform. Always taken from a verified token.
    TenantId,
    "tenant_id"
);
name_id!(
    /// An end user of a tenant: the person memories are about.
    SubjectId,
    "subject_id"
);
name_id!(
    /// A conversation session of a subject.
    SessionId,
    "session_id"
);
name_id!(
    /// The agent (bot, assistant) that took part in a conversation.
    AgentId,
    "agent_id"
);
uuid_id!(
    /// One memory; its stream holds every version.
    MemoryId,
    "memory_id"
);
uuid_id!(
    /// One event in the log; appends are idempotent on it.
    EventId,
    "event_id"
);
uuid_id!(
    /// One erasure request and its receipt.
    ErasureId,
    "erasure_id"
);

/// Namespace for ids derived from client-supplied keys (UUIDv5), so a retried
/// request maps to the same event id and the append is idempotent.
const DERIVED_NAMESPACE: Uuid = Uuid::from_u128(0x6d6e_656d_6f00_4000_8000_0000_0000_0001);

impl EventId {
    /// A deterministic event id from the parts that identify a client's
    /// request, e.g. tenant, subject and the client's message id.
    pub fn derived(parts: &[&str]) -> Self {
        let mut name = Vec::new();
        for part in parts {
            // Length-prefix each part so ("ab","c") and ("a","bc") differ.
            name.extend_from_slice(&(part.len() as u64).to_be_bytes());
            name.extend_from_slice(part.as_bytes());
        }
        Self(Uuid::new_v5(&DERIVED_NAMESPACE, &name))
    }

    /// The event id of a client's message `message_id` for a subject whose
    /// key is at `key_generation` (a generation of the subject's data key,
    /// `mnemo_crypto::KeyRef::generation`).
    ///
    /// Per generation, so that after an erasure (which starts the next
    /// generation) the same message ids are new messages instead of
    /// duplicates of the erased ones; within a generation a retry maps to
    /// the same id and appends nothing. Generation 0 (keys from before
    /// generations were counted) keeps the original derivation from tenant,
    /// subject and message id, so the ids already in the log are still the
    /// ones a retry finds.
    pub fn message(
        tenant: &TenantId,
        subject: &SubjectId,
        key_generation: u32,
        message_id: &str,
    ) -> Self {
        if key_generation == 0 {
            return Self::derived(&[tenant.as_str(), subject.as_str(), message_id]);
        }
        Self::derived(&[
            "message",
            tenant.as_str(),
            subject.as_str(),
            &key_generation.to_string(),
            message_id,
        ])
    }
}

impl EventId {
    /// The event id of a client's message, from the keyed token of its
    /// message id (`mnemo_crypto::TokenPurpose::MessageId`, a MAC under a
    /// key derived from the subject's data key).
    ///
    /// Unlike [`EventId::message`], nothing about the client's id can be
    /// recovered from this one, not even by trying candidate ids: the
    /// token needs the subject's key, which an erasure destroys. The token
    /// already differs per key, so per generation.
    pub fn message_token(tenant: &TenantId, subject: &SubjectId, token: &str) -> Self {
        Self::derived(&["message-token", tenant.as_str(), subject.as_str(), token])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_typical_ids() {
        for raw in ["acme", "user-42", "a", "org.team:7_x", &"x".repeat(128)] {
            assert!(TenantId::parse(raw).is_ok(), "{raw}");
        }
    }

    #[test]
    fn refuses_bad_ids_with_typed_errors() {
        assert_eq!(
            SubjectId::parse(""),
            Err(IdError::Empty { kind: "subject_id" })
        );
        assert!(matches!(
            SubjectId::parse("x".repeat(129)),
            Err(IdError::TooLong { .. })
        ));
        assert!(matches!(
            SubjectId::parse("alice@example.com"),
            Err(IdError::InvalidCharacter { .. })
        ));
        assert!(matches!(
            SubjectId::parse("has space"),
            Err(IdError::InvalidCharacter { .. })
        ));
        assert!(matches!(
            SubjectId::parse("-leading"),
            Err(IdError::InvalidStart { .. })
        ));
        assert!(matches!(
            SubjectId::parse("名字"),
            Err(IdError::InvalidCharacter { .. })
        ));
        assert!(matches!(
            MemoryId::parse("not-a-uuid"),
            Err(IdError::NotAUuid { kind: "memory_id" })
        ));
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<TenantId>("\"ok-1\"").is_ok());
        assert!(serde_json::from_str::<TenantId>("\"not ok\"").is_err());
        let id = MemoryId::new();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<MemoryId>(&json).unwrap(), id);
    }

    #[test]
    fn derived_event_ids_are_stable_and_separated() {
        assert_eq!(
            EventId::derived(&["t", "s", "m1"]),
            EventId::derived(&["t", "s", "m1"])
        );
        assert_ne!(
            EventId::derived(&["t", "s", "m1"]),
            EventId::derived(&["t", "s", "m2"])
        );
        assert_ne!(
            EventId::derived(&["ab", "c"]),
            EventId::derived(&["a", "bc"])
        );
    }

    #[test]
    fn message_ids_are_per_key_generation_and_generation_zero_keeps_the_old_ids() {
        let (t, s) = (
            TenantId::parse("t").unwrap(),
            SubjectId::parse("s").unwrap(),
        );
        // The ids already in the log: a retry across the upgrade finds them.
        assert_eq!(
            EventId::message(&t, &s, 0, "m1"),
            EventId::derived(&["t", "s", "m1"])
        );
        let per_generation: Vec<EventId> =
            (0..4).map(|g| EventId::message(&t, &s, g, "m1")).collect();
        for (i, a) in per_generation.iter().enumerate() {
            for b in &per_generation[i + 1..] {
                assert_ne!(a, b, "a later generation's id is new");
            }
        }
        // Stable within a generation, and still separated by every part.
        assert_eq!(
            EventId::message(&t, &s, 2, "m1"),
            EventId::message(&t, &s, 2, "m1")
        );
        assert_ne!(
            EventId::message(&t, &s, 2, "m1"),
            EventId::message(&t, &s, 2, "m2")
        );
        let other = SubjectId::parse("s2").unwrap();
        assert_ne!(
            EventId::message(&t, &s, 1, "m1"),
            EventId::message(&t, &other, 1, "m1")
        );
    }

    proptest! {
        #[test]
        fn valid_names_round_trip(raw in "[A-Za-z0-9][A-Za-z0-9._:-]{0,127}") {
            let id = SubjectId::parse(raw.clone()).unwrap();
            prop_assert_eq!(id.as_str(), raw.as_str());
            prop_assert_eq!(id.to_string().parse::<SubjectId>().unwrap(), id);
        }

        #[test]
        fn anything_with_a_forbidden_char_is_refused(
            prefix in "[a-z]{1,10}",
            bad in "[ @/#?%&\u{0}-\u{1f}\u{80}-\u{ff}]",
            suffix in "[a-z]{0,10}",
        ) {
            let raw = format!("{prefix}{bad}{suffix}");
            prop_assert!(TenantId::parse(raw).is_err());
        }

        #[test]
        fn parse_never_panics(raw in ".{0,200}") {
            let _ = AgentId::parse(raw);
        }

        #[test]
        fn uuid_ids_round_trip(n in any::<u128>()) {
            let id = EventId::from_uuid(Uuid::from_u128(n));
            prop_assert_eq!(EventId::parse(&id.to_string()).unwrap(), id);
        }
    }
}
