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
