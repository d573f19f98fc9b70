//! How a [`PointPayload`] and a [`SearchFilter`] look in Qdrant's JSON: the
//! payload stored with each point, the payload indexes, and the filter of
//! every query. Written once here in the REST shape so the embedded engine
//! (which deserialises these) and a Qdrant server adapter (which can send
//! them) cannot drift.
//!
//! The tenant condition is built in: no filter builder here can leave it out.

use mnemo_domain::{MemoryId, MemoryKind, MemoryState, SubjectId, TenantId};
use serde_json::{json, Map, Value};

use crate::{PointPayload, PointType, SearchFilter, VectorIndexError};

/// The payload layout of the points this version writes and of the
/// filters it sends; 2 added [`fields::MEMORY_SUBJECT`]. A collection is
/// named after its layout ([`collection_name`]), so one written under an
/// older layout, whose points lack what the filters now lead with, is not
/// served: a new one is built from the log beside it, as for a new model.
pub const LAYOUT: u32 = 2;

/// The collection (embedded directory or Qdrant collection) of an
/// embedding space's collection name under this version's [`LAYOUT`]:
/// `model__384` → `p2_model__384`. A prefix, so the name still ends with
/// the dimension and a generation suffix still follows it.
pub fn collection_name(space: &str) -> String {
    layout_collection_name(LAYOUT, space)
}

/// What earlier layouts named the space's collection (layout 1, before
/// layouts were named: the space's name alone), oldest first.
pub fn former_collection_names(space: &str) -> Vec<String> {
    (1..LAYOUT)
        .map(|layout| layout_collection_name(layout, space))
        .collect()
}

fn layout_collection_name(layout: u32, space: &str) -> String {
    match layout {
        1 => space.to_owned(),
        _ => format!("p{layout}_{space}"),
    }
}

/// Payload keys.
pub mod fields {
    pub const TENANT: &str = "tenant";
    pub const SUBJECT: &str = "subject";
    /// `memory` or `episode`; absent on points written before episodes,
    /// which are all memories.
    pub const TYPE: &str = "type";
    pub const KIND: &str = "kind";
    pub const TAGS: &str = "tags";
    pub const STATE: &str = "state";
    pub const SESSION: &str = "session";
    pub const AGENT: &str = "agent";
    pub const CREATED_AT: &str = "created_at";
    pub const UPDATED_AT: &str = "updated_at";
    pub const IMPORTANCE: &str = "importance";
    /// The subject again, on memory points only: the one condition a
    /// search of a subject's memories leads with. `subject` leads it to
    /// every episode of the subject too, and `type` to every memory of the
    /// tenant, each checked point by point; a long conversation made every
    /// neighbour lookup of its consolidation a scan of its episodes.
    pub const MEMORY_SUBJECT: &str = "memory_subject";
}

/// Payload indexes, as (field, Qdrant `field_schema` JSON): every field a
/// [`SearchFilter`] can test. The tenant index is marked `is_tenant` so the
/// engine can keep each tenant's points together and plan per tenant.
/// `updated_at` is not indexed: nothing filters on it.
pub fn indexes() -> Vec<(&'static str, Value)> {
    vec![
        (
            fields::TENANT,
            json!({"type": "keyword", "is_tenant": true}),
        ),
        (fields::SUBJECT, json!({"type": "keyword"})),
        (fields::MEMORY_SUBJECT, json!({"type": "keyword"})),
        (fields::TYPE, json!({"type": "keyword"})),
        (fields::KIND, json!({"type": "keyword"})),
        (fields::TAGS, json!({"type": "keyword"})),
        (fields::STATE, json!({"type": "keyword"})),
        (fields::SESSION, json!({"type": "keyword"})),
        (fields::AGENT, json!({"type": "keyword"})),
        (
            fields::CREATED_AT,
            json!({"type": "integer", "lookup": false, "range": true}),
        ),
        (fields::IMPORTANCE, json!({"type": "float"})),
    ]
}

/// The stored payload: a JSON object. Absent session/agent are left out so a
/// session filter can never match a point without one.
pub fn to_json(payload: &PointPayload) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(fields::TENANT.into(), payload.tenant.as_str().into());
    map.insert(fields::SUBJECT.into(), payload.subject.as_str().into());
    map.insert(fields::TYPE.into(), payload.point_type.as_str().into());
    if payload.point_type == PointType::Memory {
        map.insert(
            fields::MEMORY_SUBJECT.into(),
            payload.subject.as_str().into(),
        );
    }
    map.insert(fields::KIND.into(), payload.kind.as_str().into());
    map.insert(fields::TAGS.into(), json!(payload.tags));
    map.insert(fields::STATE.into(), payload.state.as_str().into());
    if let Some(session) = &payload.session {
        map.insert(fields::SESSION.into(), session.as_str().into());
    }
    if let Some(agent) = &payload.agent {
        map.insert(fields::AGENT.into(), agent.as_str().into());
    }
    map.insert(fields::CREATED_AT.into(), payload.created_at.into());
    map.insert(fields::UPDATED_AT.into(), payload.updated_at.into());
    map.insert(
        fields::IMPORTANCE.into(),
        json!(f64::from(payload.importance)),
    );
    map
}

/// Reads a stored payload back.
pub fn from_json(map: &Map<String, Value>) -> Result<PointPayload, VectorIndexError> {
    let text = |key: &str| -> Result<&str, VectorIndexError> {
        map.get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| corrupt(format!("payload field {key} is missing or not a string")))
    };
    let optional_text = |key: &str| -> Result<Option<String>, VectorIndexError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(value)) => Ok(Some(value.clone())),
            Some(_) => Err(corrupt(format!("payload field {key} is not a string"))),
        }
    };
    let integer = |key: &str| -> Result<i64, VectorIndexError> {
        map.get(key)
            .and_then(Value::as_i64)
            .ok_or_else(|| corrupt(format!("payload field {key} is missing or not an integer")))
    };
    let tags = match map.get(fields::TAGS) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| corrupt("payload field tags holds a non-string".into()))?,
        // The engine flattens a one-element array on some paths; accept it.
        Some(Value::String(one)) => vec![one.clone()],
        Some(_) => return Err(corrupt("payload field tags is not an array".into())),
    };
    Ok(PointPayload {
        tenant: TenantId::parse(text(fields::TENANT)?)
            .map_err(|e| corrupt(format!("payload tenant: {e}")))?,
        subject: SubjectId::parse(text(fields::SUBJECT)?)
            .map_err(|e| corrupt(format!("payload subject: {e}")))?,
        point_type: match optional_text(fields::TYPE)? {
            None => PointType::Memory,
            Some(value) => {
                PointType::parse(&value).ok_or_else(|| corrupt("payload type is unknown".into()))?
            }
        },
        kind: MemoryKind::parse(text(fields::KIND)?)
            .ok_or_else(|| corrupt("payload kind is unknown".into()))?,
        tags,
        state: MemoryState::parse(text(fields::STATE)?)
            .ok_or_else(|| corrupt("payload state is unknown".into()))?,
        session: optional_text(fields::SESSION)?,
        agent: optional_text(fields::AGENT)?,
        created_at: integer(fields::CREATED_AT)?,
        updated_at: integer(fields::UPDATED_AT)?,
        importance: map
            .get(fields::IMPORTANCE)
            .and_then(Value::as_f64)
            .ok_or_else(|| corrupt("payload importance is missing or not a number".into()))?
            as f32,
    })
}

fn corrupt(message: String) -> VectorIndexError {
    VectorIndexError::Corrupt(message)
}

/// The condition every engine call carries.
pub fn tenant_condition(tenant: &TenantId) -> Value {
    json!({"key": fields::TENANT, "match": {"value": tenant.as_str()}})
}

fn has_id(ids: &[MemoryId]) -> Value {
    let ids: Vec<String> = ids.iter().map(|id| id.as_uuid().to_string()).collect();
    json!({ "has_id": ids })
}

/// The tenant's points, optionally only these ids.
pub fn tenant_filter(tenant: &TenantId, ids: Option<&[MemoryId]>) -> Value {
    let mut must = vec![tenant_condition(tenant)];
    if let Some(ids) = ids {
        must.push(has_id(ids));
    }
    json!({ "must": must })
}

/// The tenant's points of one subject.
pub fn subject_filter(tenant: &TenantId, subject: &SubjectId) -> Value {
    json!({"must": [
        tenant_condition(tenant),
        {"key": fields::SUBJECT, "match": {"value": subject.as_str()}},
    ]})
}

/// A search filter: the tenant, every condition of `filter`, and optionally
/// a restriction to `ids` (the final fetch of a fused search).
pub fn search_filter(tenant: &TenantId, filter: &SearchFilter, ids: Option<&[MemoryId]>) -> Value {
    let mut must = vec![tenant_condition(tenant)];
    let wants = |t| filter.types.is_empty() && t == PointType::Memory || filter.types.contains(&t);
    match (
        &filter.subject,
        wants(PointType::Memory),
        wants(PointType::Episode),
    ) {
        // A subject's memories: one condition with exactly those points,
        // which the engine iterates (see `fields::MEMORY_SUBJECT`).
        (Some(subject), true, false) => {
            must.push(json!({"key": fields::MEMORY_SUBJECT, "match": {"value": subject.as_str()}}))
        }
        (Some(subject), _, _) => {
            must.push(json!({"key": fields::SUBJECT, "match": {"value": subject.as_str()}}))
        }
        (None, _, _) => {}
    }
    match (wants(PointType::Memory), wants(PointType::Episode)) {
        (true, true) => {}
        (true, false) if filter.subject.is_some() => {}
        // Memories, or points from before episodes (no type at all), as
        // conditions the engine can iterate through its type index: a
        // `must_not type = episode` could not lead the query, so a
        // memories-only search of a subject checked all its episodes.
        (true, false) => must.push(json!({"should": [
            {"key": fields::TYPE, "match": {"value": PointType::Memory.as_str()}},
            {"is_empty": {"key": fields::TYPE}},
        ]})),
        (false, _) => {
            must.push(json!({"key": fields::TYPE, "match": {"value": PointType::Episode.as_str()}}))
        }
    }
    if !filter.kinds.is_empty() {
        let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
        must.push(json!({"key": fields::KIND, "match": {"any": kinds}}));
    }
    // One condition per tag: a point must carry all of them.
    for tag in &filter.tags {
        must.push(json!({"key": fields::TAGS, "match": {"value": tag}}));
    }
    let states: Vec<&str> = if filter.states.is_empty() {
        vec![MemoryState::Active.as_str()]
    } else {
        filter.states.iter().map(|s| s.as_str()).collect()
    };
    must.push(json!({"key": fields::STATE, "match": {"any": states}}));
    if let Some(session) = &filter.session {
        must.push(json!({"key": fields::SESSION, "match": {"value": session}}));
    }
    if let Some(agent) = &filter.agent {
        must.push(json!({"key": fields::AGENT, "match": {"value": agent}}));
    }
    if filter.created_from.is_some() || filter.created_to.is_some() {
        let mut range = Map::new();
        if let Some(from) = filter.created_from {
            range.insert("gte".into(), from.into());
        }
        if let Some(to) = filter.created_to {
            range.insert("lte".into(), to.into());
        }
        must.push(json!({"key": fields::CREATED_AT, "range": range}));
    }
    if let Some(min) = filter.min_importance {
        // Through f64 the same way the stored value went, so a point whose
        // importance equals the bound matches.
        must.push(json!({"key": fields::IMPORTANCE, "range": {"gte": f64::from(min)}}));
    }
    if let Some(ids) = ids {
        must.push(has_id(ids));
    }
    json!({ "must": must })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> PointPayload {
        PointPayload {
            tenant: TenantId::parse("t1").unwrap(),
            subject: SubjectId::parse("s1").unwrap(),
            point_type: PointType::Episode,
            kind: MemoryKind::Preference,
            tags: vec!["food".into(), "drink".into()],
            state: MemoryState::Archived,
            session: Some("sess-1".into()),
            agent: None,
            created_at: 1_700_000_000,
            updated_at: 1_700_000_100,
            importance: 0.7,
        }
    }

    #[test]
    fn payload_round_trips_through_json() {
        let original = payload();
        let map = to_json(&original);
        assert!(!map.contains_key(fields::AGENT));
        assert_eq!(from_json(&map).unwrap(), original);
    }

    #[test]
    fn a_payload_without_a_type_is_a_memory() {
        let mut map = to_json(&payload());
        assert_eq!(map[fields::TYPE], "episode");
        map.remove(fields::TYPE);
        assert_eq!(from_json(&map).unwrap().point_type, PointType::Memory);
        map.insert(fields::TYPE.into(), "dream".into());
        assert_eq!(from_json(&map).unwrap_err().code(), "corrupt_point");
    }

    #[test]
    fn a_filter_keeps_episodes_out_unless_asked() {
        let tenant = TenantId::parse("t9").unwrap();
        let only_memories = search_filter(&tenant, &SearchFilter::default(), None);
        assert!(only_memories.get("must_not").is_none());
        assert!(only_memories["must"]
            .as_array()
            .unwrap()
            .contains(&json!({"should": [
                {"key": "type", "match": {"value": "memory"}},
                {"is_empty": {"key": "type"}},
            ]})));
        let both = SearchFilter {
            types: vec![PointType::Memory, PointType::Episode],
            ..SearchFilter::default()
        };
        let both = search_filter(&tenant, &both, None);
        assert!(both.get("must_not").is_none());
        assert!(!both["must"].to_string().contains("\"type\""));
        let episodes = SearchFilter {
            types: vec![PointType::Episode],
            ..SearchFilter::default()
        };
        let episodes = search_filter(&tenant, &episodes, None);
        assert!(episodes["must"]
            .as_array()
            .unwrap()
            .contains(&json!({"key": "type", "match": {"value": "episode"}})));
    }

    #[test]
    fn only_memories_carry_their_subject_twice() {
        let episode = to_json(&payload());
        assert!(!episode.contains_key(fields::MEMORY_SUBJECT));
        let memory = to_json(&PointPayload {
            point_type: PointType::Memory,
            ..payload()
        });
        assert_eq!(memory[fields::MEMORY_SUBJECT], "s1");
        assert_eq!(from_json(&memory).unwrap().subject.as_str(), "s1");
    }

    #[test]
    fn a_search_of_a_subjects_memories_leads_with_their_own_condition() {
        let tenant = TenantId::parse("t9").unwrap();
        let of_subject = SearchFilter {
            subject: Some(SubjectId::parse("s1").unwrap()),
            ..SearchFilter::default()
        };
        let memories = search_filter(&tenant, &of_subject, None);
        let must = memories["must"].as_array().unwrap();
        assert!(must.contains(&json!({"key": "memory_subject", "match": {"value": "s1"}})));
        // Neither condition that would lead the engine through the
        // subject's episodes or the tenant's memories.
        assert!(!memories.to_string().contains("\"subject\""));
        assert!(!memories.to_string().contains("\"type\""));
        // Episodes too: the subject, as before.
        let everything = SearchFilter {
            types: vec![PointType::Memory, PointType::Episode],
            ..of_subject
        };
        let everything = search_filter(&tenant, &everything, None);
        assert!(everything["must"]
            .as_array()
            .unwrap()
            .contains(&json!({"key": "subject", "match": {"value": "s1"}})));
        assert!(!everything.to_string().contains("memory_subject"));
    }

    #[test]
    fn a_layout_names_its_collections_and_knows_the_former_names() {
        assert_eq!(collection_name("m__384"), format!("p{LAYOUT}_m__384"));
        let former = former_collection_names("m__384");
        assert_eq!(former.first().map(String::as_str), Some("m__384"));
        assert_eq!(former.len() as u32, LAYOUT - 1);
        assert!(!former.contains(&collection_name("m__384")));
    }

    #[test]
    fn a_damaged_payload_is_reported_not_guessed() {
        let mut map = to_json(&payload());
        map.insert(fields::STATE.into(), "forgotten".into());
        assert_eq!(from_json(&map).unwrap_err().code(), "corrupt_point");
        map.remove(fields::TENANT);
        assert_eq!(from_json(&map).unwrap_err().code(), "corrupt_point");
    }

    #[test]
    fn every_filter_starts_with_the_tenant_and_defaults_to_active() {
        let tenant = TenantId::parse("t9").unwrap();
        let filter = search_filter(&tenant, &SearchFilter::default(), None);
        assert_eq!(filter["must"][0], tenant_condition(&tenant));
        let state = filter["must"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == fields::STATE)
            .unwrap();
        assert_eq!(state["match"]["any"], json!(["active"]));
        assert_eq!(
            tenant_filter(&tenant, None)["must"][0],
            tenant_condition(&tenant)
        );
    }
}
