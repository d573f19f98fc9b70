//! The cases every memory read model adapter runs, written once over
//! `&dyn MemoryReadModel`; [`read_model_cases!`] turns them into tests for
//! one adapter.
#![allow(dead_code)]

use chrono::Utc;
use mnemo_domain::events::RelationKind;
use mnemo_domain::{
    Memory, MemoryId, MemoryKind, MemoryRelation, MemoryState, Producer, Provenance, SubjectId,
    SubjectText, TenantId,
};
use mnemo_read_model::{MemoryFilter, MemoryReadModel, ReadModelError};

pub fn memory(subject: &str, kind: MemoryKind, content: &str, tags: &[&str]) -> Memory {
    Memory {
        id: MemoryId::new(),
        subject: SubjectId::parse(subject).unwrap(),
        kind,
        content: SubjectText::new(content),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        confidence: 0.9,
        importance: 0.75,
        state: MemoryState::Active,
        version: 1,
        provenance: Provenance {
            source_event_ids: vec![],
            producer: Producer::api(),
        },
        session: None,
        agent: None,
        reinforcements: 0,
        superseded_by: None,
        relations: Vec::new(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

pub fn all() -> MemoryFilter {
    MemoryFilter {
        limit: 100,
        ..Default::default()
    }
}

pub async fn upserts_only_newer_versions(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let mut m = memory("s1", MemoryKind::Fact, "lives in Lyon", &["home"]);
    model.upsert(&t, &m).await.unwrap();
    m.version = 2;
    m.content = SubjectText::new("lives in Paris");
    model.upsert(&t, &m).await.unwrap();
    let mut stale = m.clone();
    stale.version = 1;
    stale.content = SubjectText::new("lives in Lyon");
    model.upsert(&t, &stale).await.unwrap();
    let got = model.get(&t, &m.id).await.unwrap().unwrap();
    assert_eq!(got.content.as_text(), Some("lives in Paris"));
    assert_eq!(got.version, 2);
}

pub async fn lists_with_filters_pages_and_tenant_isolation(model: &dyn MemoryReadModel) {
    let a = TenantId::parse("a").unwrap();
    let b = TenantId::parse("b").unwrap();
    let s1 = SubjectId::parse("s1").unwrap();
    let pref = memory(
        "s1",
        MemoryKind::Preference,
        "likes tea",
        &["drinks", "tea"],
    );
    let fact = memory("s1", MemoryKind::Fact, "has a cat", &["pets"]);
    let mut gone = memory("s1", MemoryKind::Fact, "old", &[]);
    gone.state = MemoryState::Deleted;
    for m in [&pref, &fact, &gone] {
        model.upsert(&a, m).await.unwrap();
    }
    model
        .upsert(&b, &memory("s1", MemoryKind::Fact, "b's", &[]))
        .await
        .unwrap();

    let listed = model.list(&a, &s1, &all()).await.unwrap();
    assert_eq!(listed.len(), 2, "deleted hidden by default");
    assert_eq!(listed[0].id, fact.id, "newest first");
    let kinds = MemoryFilter {
        kinds: vec![MemoryKind::Preference],
        ..all()
    };
    assert_eq!(model.list(&a, &s1, &kinds).await.unwrap()[0].id, pref.id);
    let tags = MemoryFilter {
        tags: vec!["drinks".into(), "tea".into()],
        ..all()
    };
    assert_eq!(model.list(&a, &s1, &tags).await.unwrap().len(), 1);
    let states = MemoryFilter {
        states: vec![MemoryState::Deleted],
        ..all()
    };
    assert_eq!(model.list(&a, &s1, &states).await.unwrap()[0].id, gone.id);
    let page = MemoryFilter { limit: 1, ..all() };
    let first = model.list(&a, &s1, &page).await.unwrap();
    let second = model
        .list(
            &a,
            &s1,
            &MemoryFilter {
                before: Some(first[0].id),
                ..page
            },
        )
        .await
        .unwrap();
    assert_eq!(second[0].id, pref.id);
    assert!(model.get(&b, &pref.id).await.unwrap().is_none());
    assert_eq!(model.list(&b, &s1, &all()).await.unwrap().len(), 1);
}

pub async fn erased_content_is_refused_and_subjects_are_deleted(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let s1 = SubjectId::parse("s1").unwrap();
    let mut erased = memory("s1", MemoryKind::Fact, "x", &[]);
    erased.content = SubjectText::Erased;
    assert!(matches!(
        model.upsert(&t, &erased).await,
        Err(ReadModelError::ErasedContent)
    ));
    model
        .upsert(&t, &memory("s1", MemoryKind::Fact, "one", &["x"]))
        .await
        .unwrap();
    model
        .upsert(&t, &memory("s1", MemoryKind::Fact, "two", &[]))
        .await
        .unwrap();
    let other = memory("s2", MemoryKind::Fact, "three", &[]);
    model.upsert(&t, &other).await.unwrap();
    assert_eq!(model.delete_subject(&t, &s1).await.unwrap(), 2);
    assert!(model.list(&t, &s1, &all()).await.unwrap().is_empty());
    assert!(model.get(&t, &other.id).await.unwrap().is_some());
}

pub async fn subjects_are_scanned_across_tenants_in_pages(model: &dyn MemoryReadModel) {
    for (tenant, subject) in [("a", "s2"), ("a", "s1"), ("b", "s1"), ("a", "s1")] {
        let t = TenantId::parse(tenant).unwrap();
        model
            .upsert(&t, &memory(subject, MemoryKind::Fact, "x", &[]))
            .await
            .unwrap();
    }
    let first = model.subjects(None, 2).await.unwrap();
    let names: Vec<_> = first.iter().map(|(t, s)| format!("{t}/{s}")).collect();
    assert_eq!(names, vec!["a/s1", "a/s2"]);
    let rest = model.subjects(first.last().cloned(), 10).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].0.as_str(), "b");
}

/// Every field comes back as written (timestamps at the microsecond both
/// stores keep), including the optional ones and a provenance with sources.
pub async fn round_trips_every_field(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let at = chrono::DateTime::<Utc>::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
    let mut m = memory(
        "s1",
        MemoryKind::Decision,
        "moves to Paris — 巴黎",
        &["b", "a"],
    );
    m.confidence = 0.123_456_79;
    m.importance = 0.987_654_3;
    m.state = MemoryState::Archived;
    m.version = 7;
    m.provenance.source_event_ids = vec![mnemo_domain::EventId::new()];
    m.session = Some(mnemo_domain::SessionId::parse("session-1").unwrap());
    m.agent = Some(mnemo_domain::AgentId::parse("agent-1").unwrap());
    m.reinforcements = 3;
    m.superseded_by = Some(MemoryId::new());
    m.created_at = at - chrono::Duration::days(2);
    m.updated_at = at;
    m.relations = vec![
        MemoryRelation {
            from: MemoryId::new(),
            to: m.id,
            relation: RelationKind::Premise,
            confidence: 0.8,
        },
        MemoryRelation {
            from: m.id,
            to: MemoryId::new(),
            relation: RelationKind::Contradicts,
            confidence: 0.5,
        },
    ];
    model.upsert(&t, &m).await.unwrap();
    assert_eq!(model.get(&t, &m.id).await.unwrap(), Some(m));
}

fn ids(memories: &[Memory]) -> Vec<MemoryId> {
    memories.iter().map(|m| m.id).collect()
}

/// Three memories written in one order and asked for in another: the
/// answer follows the ids asked, not the write order nor the id order.
pub async fn get_many_keeps_the_order_of_the_ids(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let written: Vec<Memory> = ["one", "two", "three"]
        .into_iter()
        .map(|c| memory("s1", MemoryKind::Fact, c, &["x"]))
        .collect();
    for m in &written {
        model.upsert(&t, m).await.unwrap();
    }
    let asked = [written[1].id, written[2].id, written[0].id];
    let got = model.get_many(&t, &asked).await.unwrap();
    assert_eq!(ids(&got), asked);
    let one = model.get(&t, &written[1].id).await.unwrap();
    assert_eq!(
        one.as_ref(),
        got.first(),
        "whole rows, as `get` returns them"
    );
}

pub async fn get_many_skips_missing_ids(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let kept = memory("s1", MemoryKind::Fact, "kept", &[]);
    let removed = memory("s1", MemoryKind::Fact, "removed", &[]);
    model.upsert(&t, &kept).await.unwrap();
    model.upsert(&t, &removed).await.unwrap();
    model.remove(&t, &removed.id).await.unwrap();
    let never = MemoryId::new();
    let got = model
        .get_many(&t, &[never, removed.id, kept.id, MemoryId::new()])
        .await
        .unwrap();
    assert_eq!(ids(&got), [kept.id]);
    assert!(model.get_many(&t, &[never]).await.unwrap().is_empty());
}

pub async fn get_many_returns_only_the_tenants_rows(model: &dyn MemoryReadModel) {
    let a = TenantId::parse("a").unwrap();
    let b = TenantId::parse("b").unwrap();
    let of_a = memory("s1", MemoryKind::Fact, "a's", &[]);
    let of_b = memory("s1", MemoryKind::Fact, "b's", &[]);
    model.upsert(&a, &of_a).await.unwrap();
    model.upsert(&b, &of_b).await.unwrap();
    let asked = [of_b.id, of_a.id];
    assert_eq!(ids(&model.get_many(&a, &asked).await.unwrap()), [of_a.id]);
    assert_eq!(ids(&model.get_many(&b, &asked).await.unwrap()), [of_b.id]);
    let c = TenantId::parse("c").unwrap();
    assert!(model.get_many(&c, &asked).await.unwrap().is_empty());
}

pub async fn get_many_of_no_ids_is_empty(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    model
        .upsert(&t, &memory("s1", MemoryKind::Fact, "x", &[]))
        .await
        .unwrap();
    assert!(model.get_many(&t, &[]).await.unwrap().is_empty());
}

/// A repeated id comes back once, where it was first asked for.
pub async fn get_many_returns_a_repeated_id_once(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let first = memory("s1", MemoryKind::Fact, "first", &[]);
    let second = memory("s1", MemoryKind::Fact, "second", &[]);
    model.upsert(&t, &first).await.unwrap();
    model.upsert(&t, &second).await.unwrap();
    let got = model
        .get_many(&t, &[second.id, first.id, second.id, first.id, second.id])
        .await
        .unwrap();
    assert_eq!(ids(&got), [second.id, first.id]);
}

/// One `#[tokio::test]` per case. `$fixture` is an async fn returning
/// `(guard, model)`: the guard keeps the storage alive for the test.
#[macro_export]
macro_rules! read_model_cases {
    ($fixture:path) => {
        $crate::read_model_cases!(@cases $fixture;
            upserts_only_newer_versions,
            lists_with_filters_pages_and_tenant_isolation,
            erased_content_is_refused_and_subjects_are_deleted,
            subjects_are_scanned_across_tenants_in_pages,
            round_trips_every_field,
            get_many_keeps_the_order_of_the_ids,
            get_many_skips_missing_ids,
            get_many_returns_only_the_tenants_rows,
            get_many_of_no_ids_is_empty,
            get_many_returns_a_repeated_id_once,
        );
    };
    (@cases $fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let (_guard, model) = $fixture().await;
                cases::$case(&model).await;
            }
        )*
    };
}
