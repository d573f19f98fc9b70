//! JSON views shared by the services: how a memory and an event look on
//! the wire. Subject content markers become plain strings here (`null` when
//! erased), the only place they are unwrapped for a client.

use chrono::{DateTime, Utc};
use mnemo_domain::{Memory, RecordedEvent};
use serde::Serialize;
use serde_json::Value;

/// Scores are f32 inside; four decimals is all they mean, and it keeps
/// `0.9` from printing as `0.90000004`.
pub fn round4(value: f32) -> f64 {
    (f64::from(value) * 10_000.0).round() / 10_000.0
}

#[derive(Debug, Serialize)]
pub struct ProvenanceView<'a> {
    pub source_event_ids: Vec<String>,
    pub producer: &'a mnemo_domain::Producer,
}

#[derive(Debug, Serialize)]
pub struct RelationView {
    pub from: String,
    pub to: String,
    pub relation: &'static str,
    pub confidence: f64,
}

impl RelationView {
    pub fn of(relation: &mnemo_domain::MemoryRelation) -> Self {
        RelationView {
            from: relation.from.to_string(),
            to: relation.to.to_string(),
            relation: relation.relation.as_str(),
            confidence: round4(relation.confidence),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct MemoryView<'a> {
    pub id: String,
    pub subject: &'a str,
    pub kind: &'static str,
    /// `null` when the subject's key was destroyed.
    pub content: Option<&'a str>,
    pub tags: &'a [String],
    pub confidence: f64,
    pub importance: f64,
    pub state: &'static str,
    pub version: u64,
    pub provenance: ProvenanceView<'a>,
    pub session: Option<&'a str>,
    pub agent: Option<&'a str>,
    pub reinforcements: u32,
    pub superseded_by: Option<String>,
    /// Typed edges to other memories (`from` is the `relation` of `to`);
    /// a contradiction shows on both memories.
    pub relations: Vec<RelationView>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl<'a> MemoryView<'a> {
    pub fn of(memory: &'a Memory) -> Self {
        MemoryView {
            id: memory.id.to_string(),
            subject: memory.subject.as_str(),
            kind: memory.kind.as_str(),
            content: memory.content.as_text(),
            tags: &memory.tags,
            confidence: round4(memory.confidence),
            importance: round4(memory.importance),
            state: memory.state.as_str(),
            version: memory.version,
            provenance: ProvenanceView {
                source_event_ids: memory
                    .provenance
                    .source_event_ids
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                producer: &memory.provenance.producer,
            },
            session: memory.session.as_ref().map(|s| s.as_str()),
            agent: memory.agent.as_ref().map(|a| a.as_str()),
            reinforcements: memory.reinforcements,
            superseded_by: memory.superseded_by.map(|id| id.to_string()),
            relations: memory.relations.iter().map(RelationView::of).collect(),
            created_at: memory.created_at,
            updated_at: memory.updated_at,
        }
    }
}

/// Replaces subject data markers in an opened payload with plain values:
/// `{"$text": s}` → `s`, `{"$value": v}` → `v`, `{"$erased": true}` →
/// `null`.
pub fn unmark(value: &Value) -> Value {
    match value {
        Value::Object(object) if object.len() == 1 && object.contains_key("$text") => {
            object["$text"].clone()
        }
        Value::Object(object) if object.len() == 1 && object.contains_key("$value") => {
            object["$value"].clone()
        }
        Value::Object(object) if object.len() == 1 && object.contains_key("$erased") => Value::Null,
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| (key.clone(), unmark(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmark).collect()),
        other => other.clone(),
    }
}

/// True when an opened payload had content and all of it is erased.
pub fn is_erased(value: &Value) -> bool {
    fn walk(value: &Value, erased: &mut bool, text: &mut bool) {
        match value {
            Value::Object(object) if object.len() == 1 && object.contains_key("$erased") => {
                *erased = true
            }
            Value::Object(object)
                if object.len() == 1
                    && (object.contains_key("$text") || object.contains_key("$value")) =>
            {
                *text = true
            }
            Value::Object(object) => object.values().for_each(|v| walk(v, erased, text)),
            Value::Array(items) => items.iter().for_each(|v| walk(v, erased, text)),
            _ => {}
        }
    }
    let (mut erased, mut text) = (false, false);
    walk(value, &mut erased, &mut text);
    erased && !text
}

#[derive(Debug, Serialize)]
pub struct EventView {
    pub position: i64,
    pub event_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub schema_version: u16,
    pub stream: String,
    pub stream_version: u64,
    pub subject: Option<String>,
    pub actor: String,
    pub correlation_id: Option<String>,
    pub causation_id: Option<String>,
    pub traceparent: Option<String>,
    pub recorded_at: DateTime<Utc>,
    /// The payload with its subject content opened (`null` where erased).
    pub payload: Value,
}

impl EventView {
    /// `event` must have its payload opened already.
    pub fn of(event: &RecordedEvent) -> Self {
        EventView {
            position: event.global_position,
            event_id: event.event_id.to_string(),
            event_type: event.event_type.clone(),
            schema_version: event.schema_version,
            stream: event.stream_id.clone(),
            stream_version: event.stream_version,
            subject: event.subject.as_ref().map(ToString::to_string),
            actor: event.metadata.actor.clone(),
            correlation_id: event.metadata.correlation_id.clone(),
            causation_id: event.metadata.causation_id.map(|id| id.to_string()),
            traceparent: event.metadata.traceparent.clone(),
            recorded_at: event.recorded_at,
            payload: unmark(&event.payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unmark_flattens_markers() {
        let opened = json!({"content": {"$text": "hi"}, "reason": {"$erased": true}, "n": [1, {"$text": "x"}]});
        assert_eq!(
            unmark(&opened),
            json!({"content": "hi", "reason": null, "n": [1, "x"]})
        );
        assert!(!is_erased(&opened));
        assert!(is_erased(&json!({"content": {"$erased": true}})));
        assert!(!is_erased(&json!({"count": 1})));
        let values = json!({"tags": {"$value": ["a"]}, "session": {"$erased": true}});
        assert_eq!(unmark(&values), json!({"tags": ["a"], "session": null}));
        assert!(is_erased(&json!({"tags": {"$erased": true}})));
    }
}
