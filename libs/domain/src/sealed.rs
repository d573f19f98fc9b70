//! Serde adapters for values that describe a subject without being prose:
//! tags, session ids, a client's message ids. The content rule
//! ([`SubjectText`](crate::SubjectText)) covers what the subject said; these
//! fields are chosen by a client or derived from content (the rules turn
//! "allergic to penicillin" into the tag `penicillin`), so they are subject
//! data too and are sealed with the subject's key like content.
//!
//! A field using [`value`] serializes as `{"$value": <its JSON>}`, a marker
//! the crypto layer seals whole and opens back into the same JSON value.
//! Reading accepts three forms: the marker (opened), `{"$erased": true}`
//! (its key is gone: the type's default, i.e. no tags, no session, an empty
//! id), and the plain value (events stored before these fields were
//! sealed), so old versions decode without a rewrite.
//!
//! [`plain_fields`] lists, per event type, the fields that must never reach
//! the store in the plain form: the event stores refuse such a payload, as
//! they refuse clear `$text`.

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The marker of a clear JSON value (sealed by the crypto layer).
pub const VALUE: &str = "$value";

/// `#[serde(with = "crate::sealed::value")]` on a field that is subject
/// data but not text.
pub mod value {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(VALUE, value)?;
        map.end()
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: DeserializeOwned + Default,
        D: Deserializer<'de>,
    {
        let raw = Value::deserialize(d)?;
        if let Value::Object(map) = &raw {
            if map.len() == 1 {
                if let Some(inner) = map.get(VALUE) {
                    return T::deserialize(inner).map_err(D::Error::custom);
                }
                if map.get("$erased") == Some(&Value::Bool(true)) {
                    return Ok(T::default());
                }
                if map.contains_key("$sealed") {
                    return Err(D::Error::custom("a sealed value was not opened"));
                }
            }
        }
        // The plain form of events stored before the field was sealed.
        T::deserialize(raw).map_err(D::Error::custom)
    }
}

/// The fields of `event_type`'s current schema that are sealed values:
/// a payload about to be stored must not hold any of them in plain form.
pub fn sealed_fields(event_type: &str) -> &'static [&'static str] {
    match event_type {
        "MessageReceived" => &["message_id", "session"],
        "MemoryCreated" | "ReviewRequested" => &["tags", "session"],
        "MemoryRevised" | "ReviewResolved" => &["tags"],
        "ConsolidationRequested" => &["session"],
        _ => &[],
    }
}

/// Every field some event type held in plain form before it was sealed.
pub const FORMERLY_PLAIN: [&str; 3] = ["tags", "session", "message_id"];

/// Whether an event of this type and stored schema version predates the
/// sealing of its tags, session and message ids, and so may hold them in
/// plain form (what an erasure redacts).
pub fn predates_sealing(event_type: &str, schema_version: u16) -> bool {
    match event_type {
        "MessageReceived"
        | "MemoryCreated"
        | "MemoryRevised"
        | "ReviewResolved"
        | "ConsolidationRequested" => schema_version < 2,
        "ReviewRequested" => schema_version < 3,
        _ => false,
    }
}

/// Replaces the formerly plain fields present in `payload` with the erased
/// marker: the redaction of an event that [`predates_sealing`].
pub fn redact_formerly_plain(payload: &mut Value) {
    if let Value::Object(map) = payload {
        for field in FORMERLY_PLAIN {
            if let Some(v) = map.get_mut(field) {
                *v = serde_json::json!({"$erased": true});
            }
        }
    }
}

/// The sealed-value fields of `payload` that are present in plain form
/// (neither a `$value`, `$sealed` nor `$erased` marker). Empty for a
/// well-formed payload.
pub fn plain_fields(event_type: &str, payload: &Value) -> Vec<&'static str> {
    let is_marker = |v: &Value| match v {
        Value::Object(m) => {
            m.len() == 1
                && ["$value", "$sealed", "$erased"]
                    .iter()
                    .any(|k| m.contains_key(*k))
        }
        _ => false,
    };
    sealed_fields(event_type)
        .iter()
        .copied()
        .filter(|field| payload.get(*field).is_some_and(|v| !is_marker(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(with = "value", default, skip_serializing_if = "Vec::is_empty")]
        tags: Vec<String>,
        #[serde(with = "value", default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    }

    #[test]
    fn writes_markers_and_reads_markers_erased_and_plain_forms() {
        let h = Holder {
            tags: vec!["a".into()],
            session: Some("s1".into()),
        };
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(
            v,
            json!({"tags": {"$value": ["a"]}, "session": {"$value": "s1"}})
        );
        assert_eq!(serde_json::from_value::<Holder>(v).unwrap(), h);

        let legacy = json!({"tags": ["a"], "session": "s1"});
        assert_eq!(serde_json::from_value::<Holder>(legacy).unwrap(), h);

        let erased = json!({"tags": {"$erased": true}, "session": {"$erased": true}});
        assert_eq!(
            serde_json::from_value::<Holder>(erased).unwrap(),
            Holder {
                tags: vec![],
                session: None
            }
        );
        let empty = Holder {
            tags: vec![],
            session: None,
        };
        assert_eq!(serde_json::to_value(&empty).unwrap(), json!({}));

        let unopened = json!({"tags": {"$sealed": {"alg": "A256GCM"}}});
        assert!(serde_json::from_value::<Holder>(unopened).is_err());
    }

    #[test]
    fn the_versions_before_sealing_are_known_and_redacted() {
        assert!(predates_sealing("MemoryCreated", 1));
        assert!(!predates_sealing("MemoryCreated", 2));
        assert!(predates_sealing("ReviewRequested", 2));
        assert!(!predates_sealing("SubjectErased", 1));
        let mut p = json!({"tags": ["x"], "message_id": "m", "kind": "fact"});
        redact_formerly_plain(&mut p);
        assert_eq!(
            p,
            json!({"tags": {"$erased": true}, "message_id": {"$erased": true}, "kind": "fact"})
        );
    }

    #[test]
    fn plain_fields_are_named() {
        let sealed = json!({"tags": {"$sealed": {}}, "session": {"$value": "s"}});
        assert!(plain_fields("MemoryCreated", &sealed).is_empty());
        let plain = json!({"tags": ["x"], "session": "s", "content": {"$text": "c"}});
        assert_eq!(plain_fields("MemoryCreated", &plain), ["tags", "session"]);
        assert_eq!(
            plain_fields("MessageReceived", &json!({"message_id": "jane@x"})),
            ["message_id"]
        );
        assert!(plain_fields("MemoryArchived", &plain).is_empty());
    }
}
