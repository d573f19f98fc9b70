//! The cases every memory read model adapter runs, written once over
//! `&dyn MemoryReadModel` (or a [`Fixture`], for the cases that need the
//! adapter's cipher or its legacy rows); [`read_model_cases!`] turns them
//! into tests for one adapter.
#![allow(dead_code)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use mnemo_crypto::{MemorySubjectKeyStore, SubjectCipher, TokenPurpose};
use mnemo_domain::events::RelationKind;
use mnemo_domain::{
    Memory, MemoryId, MemoryKind, MemoryRelation, MemoryState, Producer, Provenance, SessionId,
    SubjectId, SubjectText, TenantId,
};
use mnemo_read_model::{
    MemoryFilter, MemoryReadModel, ReadModelError, SubjectFilter, SubjectSummary,
};

/// Writes a row the way the read model did before it was sealed: content,
/// tags and session in clear, no sealed blob. Each adapter's test file
/// implements it in its own SQL.
#[async_trait]
pub trait LegacyRows: Send + Sync {
    async fn insert_legacy(&self, tenant: &TenantId, memory: &Memory);
}

/// An adapter under test with the cipher it was built with.
pub struct Fixture {
    pub model: Box<dyn MemoryReadModel>,
    pub cipher: Arc<SubjectCipher>,
    pub legacy: Box<dyn LegacyRows>,
}

/// A cipher over an in-memory key store: the read model only needs one
/// that seals, opens and destroys.
pub fn cipher() -> Arc<SubjectCipher> {
    Arc::new(SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new())))
}

/// A string no test writes twice, to look for in storage.
pub fn canary() -> String {
    format!("canary{}", MemoryId::new().as_uuid().simple())
}

/// A memory as a client would write it, with times at the microsecond both
/// stores keep, so what is read back compares equal.
pub fn memory(subject: &str, kind: MemoryKind, content: &str, tags: &[&str]) -> Memory {
    let now =
        chrono::DateTime::<Utc>::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
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
        created_at: now,
        updated_at: now,
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

pub async fn upserts_many_in_one_write_with_the_same_version_rule(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t-many").unwrap();
    let mut first = memory("s1", MemoryKind::Fact, "lives in Lyon", &["home"]);
    let second = memory("s1", MemoryKind::Preference, "drinks green tea", &["drink"]);
    model.upsert(&t, &first).await.unwrap();
    first.version = 2;
    first.content = SubjectText::new("lives in Paris");
    let mut stale = first.clone();
    stale.version = 1;
    stale.content = SubjectText::new("lives in Lyon");
    // A newer version, a new row, and (after them) a stale one, read
    // under the subject's first key (made by the upsert above).
    model
        .upsert_many(&t, &[(first.clone(), 1), (second.clone(), 1), (stale, 1)])
        .await
        .unwrap();
    let got = model.get_many(&t, &[first.id, second.id]).await.unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].content.as_text(), Some("lives in Paris"));
    assert_eq!(got[0].version, 2);
    assert_eq!(got[1].content.as_text(), Some("drinks green tea"));
    model.upsert_many(&t, &[]).await.unwrap();
    // An erased memory refuses the whole write: nothing of it lands.
    let third = memory("s1", MemoryKind::Fact, "has a cat", &[]);
    let mut erased = memory("s1", MemoryKind::Fact, "x", &[]);
    erased.content = SubjectText::Erased;
    assert!(model
        .upsert_many(&t, &[(third.clone(), 1), (erased, 1)])
        .await
        .is_err());
    assert!(model.get(&t, &third.id).await.unwrap().is_none());
}

/// A row read under a key that an erasure destroyed since is refused, the
/// whole write with it, and no key is made for it: sealing it under a new
/// key would serve the erased memory again. Rows read under the subject's
/// next key are written.
pub async fn rows_read_under_a_destroyed_key_are_not_written(f: &Fixture) {
    let model = &*f.model;
    let t = TenantId::parse("t1").unwrap();
    let s1 = subject("s1");
    let first = memory("s1", MemoryKind::Fact, "lives in Lyon", &["home"]);
    model.upsert(&t, &first).await.unwrap();
    let read = f.cipher.live_generation(&t, &s1).await.unwrap().unwrap();
    let mut revised = first.clone();
    revised.version = 2;
    revised.content = SubjectText::new("lives in Paris");
    let other = memory("s2", MemoryKind::Fact, "s2's", &[]);
    model.upsert(&t, &other).await.unwrap();
    let s2_generation = f
        .cipher
        .live_generation(&t, &subject("s2"))
        .await
        .unwrap()
        .unwrap();

    f.cipher.destroy(&t, &s1).await.unwrap();
    model.delete_subject(&t, &s1).await.unwrap();
    let mut other_revised = other.clone();
    other_revised.version = 2;
    let refused = model
        .upsert_many(
            &t,
            &[
                (other_revised.clone(), s2_generation),
                (revised.clone(), read),
            ],
        )
        .await;
    assert!(
        matches!(refused, Err(ReadModelError::SubjectErased)),
        "{refused:?}"
    );
    assert_eq!(f.cipher.live_generation(&t, &s1).await.unwrap(), None);
    assert!(model.list(&t, &s1, &all()).await.unwrap().is_empty());
    assert_eq!(model.get(&t, &other.id).await.unwrap(), Some(other));

    // The subject writes again: its next key, under which the old read is
    // still refused and a new one written.
    let later = memory("s1", MemoryKind::Fact, "written after", &[]);
    model.upsert(&t, &later).await.unwrap();
    let next = f.cipher.live_generation(&t, &s1).await.unwrap().unwrap();
    assert_ne!(next, read);
    assert!(matches!(
        model.upsert_many(&t, &[(revised.clone(), read)]).await,
        Err(ReadModelError::SubjectErased)
    ));
    let mut later_revised = later.clone();
    later_revised.version = 2;
    model
        .upsert_many(&t, &[(later_revised.clone(), next)])
        .await
        .unwrap();
    assert_eq!(model.list(&t, &s1, &all()).await.unwrap(), [later_revised]);
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

/// A tenant's subjects in byte order, a page at a time, counted by state,
/// filtered by prefix (`_` and `%` are no patterns) or to one subject, and
/// never another tenant's.
pub async fn subjects_of_a_tenant_are_listed_with_counts(model: &dyn MemoryReadModel) {
    let t = TenantId::parse("t1").unwrap();
    let other = TenantId::parse("t2").unwrap();
    let mut last = None;
    for (subject, state) in [
        ("bob", MemoryState::Active),
        ("ann", MemoryState::Active),
        ("ann", MemoryState::Archived),
        ("ann", MemoryState::Active),
        ("ann", MemoryState::Deleted),
        ("a_x", MemoryState::Superseded),
        ("carl", MemoryState::Active),
    ] {
        let mut m = memory(subject, MemoryKind::Fact, "x", &[]);
        m.state = state;
        m.updated_at += chrono::Duration::seconds(1);
        if subject == "ann" {
            last = last.max(Some(m.updated_at));
        }
        model.upsert(&t, &m).await.unwrap();
    }
    model
        .upsert(&other, &memory("aaron", MemoryKind::Fact, "x", &[]))
        .await
        .unwrap();
    let list =
        |prefix: Option<&str>, after: Option<&str>, only: Option<&str>, limit| SubjectFilter {
            prefix: prefix.map(str::to_owned),
            after: after.map(|s| SubjectId::parse(s).unwrap()),
            only: only.map(|s| SubjectId::parse(s).unwrap()),
            limit,
        };
    let names = |page: &[SubjectSummary]| -> Vec<String> {
        page.iter().map(|s| s.subject.to_string()).collect()
    };

    let first = model
        .list_subjects(&t, &list(None, None, None, 2))
        .await
        .unwrap();
    assert_eq!(names(&first), ["a_x", "ann"]);
    assert_eq!(
        first[1].states,
        [
            (MemoryState::Active, 2),
            (MemoryState::Archived, 1),
            (MemoryState::Deleted, 1)
        ]
    );
    assert_eq!(first[1].last_activity, last);
    assert_eq!(first[0].states, [(MemoryState::Superseded, 1)]);
    let rest = model
        .list_subjects(&t, &list(None, Some("ann"), None, 2))
        .await
        .unwrap();
    assert_eq!(names(&rest), ["bob", "carl"]);
    let end = model
        .list_subjects(&t, &list(None, Some("carl"), None, 2))
        .await
        .unwrap();
    assert!(end.is_empty());

    let a = model
        .list_subjects(&t, &list(Some("a"), None, None, 10))
        .await
        .unwrap();
    assert_eq!(names(&a), ["a_x", "ann"]);
    let literal = model
        .list_subjects(&t, &list(Some("a_"), None, None, 10))
        .await
        .unwrap();
    assert_eq!(names(&literal), ["a_x"]);
    let pattern = model
        .list_subjects(&t, &list(Some("%"), None, None, 10))
        .await
        .unwrap();
    assert!(pattern.is_empty());
    let only = model
        .list_subjects(&t, &list(None, None, Some("bob"), 10))
        .await
        .unwrap();
    assert_eq!(names(&only), ["bob"]);
    let theirs = model
        .list_subjects(&other, &list(None, None, None, 10))
        .await
        .unwrap();
    assert_eq!(names(&theirs), ["aaron"]);
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

fn subject(name: &str) -> SubjectId {
    SubjectId::parse(name).unwrap()
}

fn tagged(tags: &[&str]) -> MemoryFilter {
    MemoryFilter {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        ..all()
    }
}

/// A write longer than any one statement the adapters build (120 rows,
/// SQLite's upserts take 50): every row lands with its tags; of one memory
/// twice in the write, the higher version and its tags are kept, whichever
/// comes first; a stale row changes neither the memory nor its tags.
pub async fn a_long_write_keeps_each_rows_tags_and_the_newest_version(f: &Fixture) {
    let model = &*f.model;
    let t = TenantId::parse("t-long").unwrap();
    let s1 = subject("s1");
    let kept = memory("s1", MemoryKind::Fact, "kept as written", &["old"]);
    model.upsert(&t, &kept).await.unwrap();
    let mut stale = kept.clone();
    stale.content = SubjectText::new("a stale copy");
    stale.tags = vec!["stale".into()];
    let mut rows: Vec<Memory> = (0..118)
        .map(|n| {
            let parity = if n % 2 == 0 { "even" } else { "odd" };
            memory(
                "s1",
                MemoryKind::Fact,
                &format!("fact {n}"),
                &["bulk", parity],
            )
        })
        .collect();
    let mut newest = rows[3].clone();
    newest.version = 3;
    newest.tags = vec!["revised".into()];
    newest.content = SubjectText::new("fact 3, revised");
    let mut middle = rows[3].clone();
    middle.version = 2;
    middle.tags = vec!["middle".into()];
    // The newest version early and an older one late, across the 50-row
    // statements: the older one must not win.
    rows.insert(10, newest.clone());
    rows.push(middle);
    rows.push(stale);
    let written: Vec<(Memory, u32)> = rows.iter().map(|m| (m.clone(), 1)).collect();
    model.upsert_many(&t, &written).await.unwrap();

    let listed = |tags: &[&str]| {
        let filter = MemoryFilter {
            limit: 1000,
            ..tagged(tags)
        };
        let s1 = s1.clone();
        let t = t.clone();
        async move { model.list(&t, &s1, &filter).await.unwrap() }
    };
    assert_eq!(
        listed(&["bulk"]).await.len(),
        117,
        "all but the revised one"
    );
    assert_eq!(listed(&["bulk", "even"]).await.len(), 59, "fact 3 is odd");
    assert_eq!(ids(&listed(&["revised"]).await), [newest.id]);
    assert!(listed(&["middle"]).await.is_empty());
    assert!(listed(&["stale"]).await.is_empty());
    assert_eq!(ids(&listed(&["old"]).await), [kept.id]);
    let got = model.get(&t, &newest.id).await.unwrap().unwrap();
    assert_eq!(
        (got.version, got.content.as_text()),
        (3, Some("fact 3, revised"))
    );
    assert_eq!(model.get(&t, &kept.id).await.unwrap(), Some(kept));
}

/// Tags are matched through their tokens: every tag asked must be on the
/// memory, another subject's equal tag does not match, and asking for the
/// tags of a subject without a key finds nothing and creates no key.
pub async fn tag_filters_match_through_tokens(f: &Fixture) {
    let model = &*f.model;
    let t = TenantId::parse("t1").unwrap();
    let tea = memory(
        "s1",
        MemoryKind::Preference,
        "likes tea",
        &["drinks", "tea"],
    );
    let coffee = memory("s1", MemoryKind::Preference, "likes coffee", &["drinks"]);
    let other = memory("s2", MemoryKind::Preference, "likes tea too", &["tea"]);
    for m in [&tea, &coffee, &other] {
        model.upsert(&t, m).await.unwrap();
    }
    let s1 = subject("s1");
    assert_eq!(
        ids(&model.list(&t, &s1, &tagged(&["drinks"])).await.unwrap()),
        [coffee.id, tea.id]
    );
    assert_eq!(
        ids(&model
            .list(&t, &s1, &tagged(&["tea", "drinks"]))
            .await
            .unwrap()),
        [tea.id]
    );
    assert!(model
        .list(&t, &s1, &tagged(&["coffee"]))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        ids(&model
            .list(&t, &subject("s2"), &tagged(&["tea"]))
            .await
            .unwrap()),
        [other.id]
    );
    let nobody = subject("nobody");
    assert!(model
        .list(&t, &nobody, &tagged(&["tea"]))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        f.cipher.live_generation(&t, &nobody).await.unwrap(),
        None,
        "a query made no key"
    );
}

/// Content, tags (order and repeats kept) and session come back alike from
/// `get`, `get_many` and `list`.
pub async fn subject_fields_round_trip_through_every_read(f: &Fixture) {
    let model = &*f.model;
    let t = TenantId::parse("t1").unwrap();
    let mut m = memory(
        "s1",
        MemoryKind::Fact,
        "allergic to penicillin — 对青霉素过敏 \"quoted\" {\"$text\": 1}",
        &["zeta", "alpha", "zeta", "醫療"],
    );
    m.session = Some(SessionId::parse("session-42").unwrap());
    let plain = memory("s1", MemoryKind::Fact, "", &[]);
    model.upsert(&t, &m).await.unwrap();
    model.upsert(&t, &plain).await.unwrap();
    assert_eq!(model.get(&t, &m.id).await.unwrap().as_ref(), Some(&m));
    assert_eq!(
        model.get_many(&t, &[plain.id, m.id]).await.unwrap(),
        [plain.clone(), m.clone()]
    );
    assert_eq!(
        model.list(&t, &subject("s1"), &all()).await.unwrap(),
        [plain, m.clone()]
    );
    assert_eq!(
        model
            .list(&t, &subject("s1"), &tagged(&["醫療"]))
            .await
            .unwrap(),
        [m]
    );
}

/// Once the subject's key is destroyed its rows are not served, before
/// any `delete_subject`: they open as erased. Other subjects are
/// untouched, a memory written under the subject's next key is served,
/// and a page is filled past the rows held back.
pub async fn rows_of_a_destroyed_key_are_not_served(f: &Fixture) {
    let model = &*f.model;
    let t = TenantId::parse("t1").unwrap();
    let (s1, s2) = (subject("s1"), subject("s2"));
    // The id of the memory written after the erasure is taken first, so
    // it is older than the erased ones and listed after them.
    let later = memory("s1", MemoryKind::Fact, "written after", &["x"]);
    let erased: Vec<Memory> = ["one", "two", "three"]
        .into_iter()
        .map(|c| memory("s1", MemoryKind::Fact, c, &["x"]))
        .collect();
    let kept = memory("s2", MemoryKind::Fact, "s2's", &["x"]);
    for m in erased.iter().chain([&kept]) {
        model.upsert(&t, m).await.unwrap();
    }
    assert_eq!(model.list(&t, &s1, &all()).await.unwrap().len(), 3);

    f.cipher.destroy(&t, &s1).await.unwrap();
    for m in &erased {
        assert_eq!(model.get(&t, &m.id).await.unwrap(), None);
    }
    let asked: Vec<MemoryId> = erased.iter().map(|m| m.id).chain([kept.id]).collect();
    assert_eq!(ids(&model.get_many(&t, &asked).await.unwrap()), [kept.id]);
    assert!(model.list(&t, &s1, &all()).await.unwrap().is_empty());
    assert!(model
        .list(&t, &s1, &tagged(&["x"]))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(model.get(&t, &kept.id).await.unwrap(), Some(kept.clone()));
    assert_eq!(
        ids(&model.list(&t, &s2, &tagged(&["x"])).await.unwrap()),
        [kept.id]
    );

    // The subject writes again: a new key, and only the new row is served,
    // even on a page of one whose first rows are all held back.
    model.upsert(&t, &later).await.unwrap();
    let page = MemoryFilter { limit: 1, ..all() };
    assert_eq!(ids(&model.list(&t, &s1, &page).await.unwrap()), [later.id]);
    assert_eq!(
        ids(&model.list(&t, &s1, &tagged(&["x"])).await.unwrap()),
        [later.id]
    );
    assert_eq!(ids(&model.get_many(&t, &asked).await.unwrap()), [kept.id]);

    // The erasure's delete then removes every row of the subject.
    assert_eq!(model.delete_subject(&t, &s1).await.unwrap(), 4);
    assert_eq!(model.get(&t, &kept.id).await.unwrap(), Some(kept));
}

/// Rows written before the read model was sealed (clear columns, no blob)
/// still read, through every read and the tag filter, while their subject
/// has a key; a newer version rewrites them sealed. Once the key is
/// destroyed they are not served either.
pub async fn legacy_rows_still_read(f: &Fixture) {
    let model = &*f.model;
    let t = TenantId::parse("t1").unwrap();
    let s1 = subject("s1");
    // Every legacy memory's content was sealed in the log under its
    // subject's key: the subject has one.
    f.cipher
        .token(&t, &s1, TokenPurpose::Tag, "any")
        .await
        .unwrap();
    let mut old = memory(
        "s1",
        MemoryKind::Preference,
        "likes tea",
        &["drinks", "tea"],
    );
    old.session = Some(SessionId::parse("session-1").unwrap());
    let other = memory("s1", MemoryKind::Fact, "has a cat", &["pets"]);
    f.legacy.insert_legacy(&t, &old).await;
    f.legacy.insert_legacy(&t, &other).await;
    let sealed = memory("s1", MemoryKind::Fact, "sealed", &["tea"]);
    model.upsert(&t, &sealed).await.unwrap();

    assert_eq!(model.get(&t, &old.id).await.unwrap().as_ref(), Some(&old));
    assert_eq!(
        model.get_many(&t, &[other.id, old.id]).await.unwrap(),
        [other.clone(), old.clone()]
    );
    assert_eq!(
        ids(&model.list(&t, &s1, &all()).await.unwrap()),
        [sealed.id, other.id, old.id]
    );
    assert_eq!(
        ids(&model.list(&t, &s1, &tagged(&["tea"])).await.unwrap()),
        [sealed.id, old.id],
        "legacy tags match in clear, sealed ones through tokens"
    );
    assert_eq!(
        ids(&model
            .list(&t, &s1, &tagged(&["drinks", "tea"]))
            .await
            .unwrap()),
        [old.id]
    );

    // A newer version is written sealed, and still matches its tags.
    let mut newer = old.clone();
    newer.version = 2;
    newer.tags = vec!["tea".into(), "green".into()];
    model.upsert(&t, &newer).await.unwrap();
    assert_eq!(model.get(&t, &old.id).await.unwrap().as_ref(), Some(&newer));
    assert_eq!(
        ids(&model.list(&t, &s1, &tagged(&["green"])).await.unwrap()),
        [old.id]
    );
    assert!(model
        .list(&t, &s1, &tagged(&["drinks"]))
        .await
        .unwrap()
        .is_empty());

    f.cipher.destroy(&t, &s1).await.unwrap();
    assert_eq!(model.get(&t, &other.id).await.unwrap(), None);
    assert!(model.get_many(&t, &[other.id]).await.unwrap().is_empty());
    assert!(model.list(&t, &s1, &all()).await.unwrap().is_empty());
}

/// One `#[tokio::test]` per case. `$fixture` is an async fn returning
/// `(guard, Fixture)`: the guard keeps the storage alive for the test.
#[macro_export]
macro_rules! read_model_cases {
    ($fixture:path) => {
        $crate::read_model_cases!(@model $fixture;
            upserts_only_newer_versions,
            upserts_many_in_one_write_with_the_same_version_rule,
            lists_with_filters_pages_and_tenant_isolation,
            erased_content_is_refused_and_subjects_are_deleted,
            subjects_are_scanned_across_tenants_in_pages,
            subjects_of_a_tenant_are_listed_with_counts,
            round_trips_every_field,
            get_many_keeps_the_order_of_the_ids,
            get_many_skips_missing_ids,
            get_many_returns_only_the_tenants_rows,
            get_many_of_no_ids_is_empty,
            get_many_returns_a_repeated_id_once,
        );
        $crate::read_model_cases!(@fixture $fixture;
            tag_filters_match_through_tokens,
            a_long_write_keeps_each_rows_tags_and_the_newest_version,
            subject_fields_round_trip_through_every_read,
            rows_of_a_destroyed_key_are_not_served,
            rows_read_under_a_destroyed_key_are_not_written,
            legacy_rows_still_read,
        );
    };
    (@model $fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let (_guard, fixture) = $fixture().await;
                cases::$case(&*fixture.model).await;
            }
        )*
    };
    (@fixture $fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let (_guard, fixture) = $fixture().await;
                cases::$case(&fixture).await;
            }
        )*
    };
}
