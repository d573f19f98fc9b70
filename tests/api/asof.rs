//! As-of reads and subject changes: what the log says a subject's memories
//! were at an instant, against what the ordinary reads showed at that
//! instant; the exact changes of a known sequence; the subject list.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use mnemo_auth::Scope;
use mnemo_domain::events::{
    streams, MemoryStateChanged, ProfileUpdated, ProposedAction, ReviewRequested,
};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, MemoryId, MemoryKind, Producer, SubjectId, SubjectText,
    TenantId,
};
use mnemo_event_store::sealed::Pending;
use mnemo_event_store::ExpectedVersion;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp};

const ALL_STATES: &str = "active,pending_review,archived,superseded,deleted";

fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// An instant after everything recorded so far and before anything
/// recorded next (the stores keep microseconds).
async fn instant() -> DateTime<Utc> {
    tokio::time::sleep(Duration::from_millis(2)).await;
    let at = Utc::now();
    tokio::time::sleep(Duration::from_millis(2)).await;
    at
}

fn actor(name: &str) -> EventMetadata {
    EventMetadata {
        actor: name.to_owned(),
        ..Default::default()
    }
}

impl TestApp {
    /// Appends a state change as the forgetter does (archive, restore).
    async fn state_change(&self, tenant: &str, memory: &str, event: DomainEvent, subject: &str) {
        let id = MemoryId::parse(memory).unwrap();
        self.log
            .append_one(
                &TenantId::parse(tenant).unwrap(),
                &streams::memory(&id),
                ExpectedVersion::Any,
                Pending {
                    event_id: EventId::new(),
                    subject: Some(SubjectId::parse(subject).unwrap()),
                    event,
                    metadata: actor("forgetter"),
                },
            )
            .await
            .unwrap();
    }

    /// A review held by the consolidator; returns its id.
    async fn held(
        &self,
        tenant: &str,
        subject: &str,
        content: &str,
        action: ProposedAction,
        target: Option<&str>,
    ) -> String {
        let review_id = MemoryId::new();
        let event = DomainEvent::ReviewRequested(ReviewRequested {
            review_id,
            proposed: SubjectText::new(content),
            kind: MemoryKind::Fact,
            confidence: 0.7,
            source_event_ids: vec![EventId::new()],
            tags: vec!["t1".to_owned()],
            action,
            target: target.map(|t| MemoryId::parse(t).unwrap()),
            reason: Some(SubjectText::new("confidence in the review band")),
            reason_code: None,
            signals: Vec::new(),
            excerpt: None,
            producer: Some(Producer {
                strategy: "llm".to_owned(),
                version: "1".to_owned(),
                model: Some("test-model".to_owned()),
                prompt_version: Some("extract-v1".to_owned()),
                fallback: None,
            }),
            session: None,
            pii: Default::default(),
        });
        self.log
            .append_one(
                &TenantId::parse(tenant).unwrap(),
                &streams::review(&review_id),
                ExpectedVersion::NoStream,
                Pending {
                    event_id: EventId::new(),
                    subject: Some(SubjectId::parse(subject).unwrap()),
                    event,
                    metadata: actor("consolidator"),
                },
            )
            .await
            .unwrap();
        review_id.to_string()
    }

    async fn decide(&self, token: &str, review: &str, body: Value) -> Value {
        self.post_json(&format!("/v1/review/{review}"), token, body)
            .await
    }
}

fn without_as_of(mut memory: Value) -> Value {
    memory.as_object_mut().unwrap().remove("as_of");
    memory
}

// ---------------------------------------------------------------- property

#[derive(Debug, Clone)]
enum Op {
    Create {
        tagged: bool,
    },
    Revise {
        target: usize,
        tag: bool,
    },
    Delete {
        target: usize,
    },
    Archive {
        target: usize,
    },
    Restore {
        target: usize,
    },
    Review {
        action: u8,
        target: usize,
        approve: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<bool>().prop_map(|tagged| Op::Create { tagged }),
        2 => (0..8usize, any::<bool>()).prop_map(|(target, tag)| Op::Revise { target, tag }),
        1 => (0..8usize).prop_map(|target| Op::Delete { target }),
        1 => (0..8usize).prop_map(|target| Op::Archive { target }),
        1 => (0..8usize).prop_map(|target| Op::Restore { target }),
        2 => (0..3u8, 0..8usize, any::<bool>())
            .prop_map(|(action, target, approve)| Op::Review { action, target, approve }),
    ]
}

/// What the ordinary reads showed at an instant.
struct Snapshot {
    at: DateTime<Utc>,
    every_state: Vec<Value>,
    default: Vec<Value>,
    tagged: Vec<Value>,
}

async fn list(app: &TestApp, token: &str, subject: &str, query: &str) -> Vec<Value> {
    let body = app
        .get_json(
            &format!("/v1/subjects/{subject}/memories?limit=500{query}"),
            token,
        )
        .await;
    body["memories"].as_array().unwrap().clone()
}

/// Runs `ops` on `subject` through the API (and the log, for what the
/// forgetter and the consolidator append), snapshotting the read model's
/// lists after each step once they caught up with the log.
async fn run(app: &TestApp, subject: &str, ops: &[Op]) -> Vec<Snapshot> {
    let token = app.admin("acme");
    let mut ids: Vec<String> = Vec::new();
    let mut snapshots = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let pick = |target: &usize| (!ids.is_empty()).then(|| ids[target % ids.len()].clone());
        match op {
            Op::Create { tagged } => {
                let tags: Vec<&str> = if *tagged { vec!["t1"] } else { vec![] };
                let response = app
                    .create_memory(
                        &token,
                        subject,
                        json!({"content": format!("fact {step}"), "kind": "fact", "tags": tags}),
                    )
                    .await;
                assert_eq!(response.status(), 201);
                let body: Value = response.json().await.unwrap();
                ids.push(body["id"].as_str().unwrap().to_owned());
            }
            Op::Revise { target, tag } => {
                let Some(id) = pick(target) else { continue };
                let body = match tag {
                    true => json!({"tags": ["t1", "t2"], "reason": format!("step {step}")}),
                    false => json!({"content": format!("revised {step}")}),
                };
                let response = app
                    .call(
                        Method::PATCH,
                        &format!("/v1/memories/{id}"),
                        &token,
                        Some(body),
                    )
                    .await;
                // A deleted memory cannot be revised: nothing is recorded.
                assert!(matches!(response.status().as_u16(), 200 | 409));
            }
            Op::Delete { target } => {
                let Some(id) = pick(target) else { continue };
                let response = app
                    .call(Method::DELETE, &format!("/v1/memories/{id}"), &token, None)
                    .await;
                assert_eq!(response.status(), 200);
            }
            Op::Archive { target } | Op::Restore { target } => {
                let Some(id) = pick(target) else { continue };
                let now = app.get_json(&format!("/v1/memories/{id}"), &token).await;
                let event = match (op, now["state"].as_str().unwrap()) {
                    (Op::Archive { .. }, "active") => {
                        DomainEvent::MemoryArchived(MemoryStateChanged {
                            reason: Some(SubjectText::new("idle")),
                        })
                    }
                    (Op::Restore { .. }, "archived") => {
                        DomainEvent::MemoryRestored(MemoryStateChanged::default())
                    }
                    _ => continue,
                };
                app.state_change("acme", &id, event, subject).await;
            }
            Op::Review {
                action,
                target,
                approve,
            } => {
                let target = pick(target);
                let action = match (action, &target) {
                    (1, Some(_)) => ProposedAction::Supersede,
                    (2, Some(_)) => ProposedAction::MergeInto,
                    _ => ProposedAction::Create,
                };
                let target = target.filter(|_| action != ProposedAction::Create);
                let review = app
                    .held(
                        "acme",
                        subject,
                        &format!("held {step}"),
                        action,
                        target.as_deref(),
                    )
                    .await;
                let decision = if *approve { "approve" } else { "reject" };
                let resolved = app
                    .decide(&token, &review, json!({"decision": decision}))
                    .await;
                if let Some(id) = resolved["memory"]["id"].as_str() {
                    ids.push(id.to_owned());
                }
            }
        }
        // The lists trail the log: wait until every memory is listed at
        // the version its stream has.
        let mut versions = Vec::new();
        for id in &ids {
            let memory = app.get_json(&format!("/v1/memories/{id}"), &token).await;
            versions.push((id.clone(), memory["version"].clone()));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let every_state = loop {
            let listed = list(app, &token, subject, &format!("&state={ALL_STATES}")).await;
            let caught_up = listed.len() == versions.len()
                && versions.iter().all(|(id, version)| {
                    listed
                        .iter()
                        .any(|m| m["id"] == id.as_str() && &m["version"] == version)
                });
            if caught_up {
                break listed;
            }
            assert!(tokio::time::Instant::now() < deadline, "never projected");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let default = list(app, &token, subject, "").await;
        let tagged = list(app, &token, subject, "&tag=t1").await;
        snapshots.push(Snapshot {
            at: instant().await,
            every_state,
            default,
            tagged,
        });
    }
    snapshots
}

async fn check(app: &TestApp, subject: &str, snapshots: &[Snapshot]) {
    let token = app.admin("acme");
    for snapshot in snapshots {
        let at = stamp(snapshot.at);
        for (query, expected) in [
            (format!("&state={ALL_STATES}"), &snapshot.every_state),
            (String::new(), &snapshot.default),
            ("&tag=t1".to_owned(), &snapshot.tagged),
        ] {
            let folded: Vec<Value> = list(app, &token, subject, &format!("{query}&as_of={at}"))
                .await
                .into_iter()
                .map(|m| {
                    assert!(m["as_of"]["event"]["recorded_at"].as_str().unwrap() <= at.as_str());
                    without_as_of(m)
                })
                .collect();
            assert_eq!(&folded, expected, "list{query} as of {at}");
        }
        for memory in &snapshot.every_state {
            let id = memory["id"].as_str().unwrap();
            let folded = app
                .get_json(&format!("/v1/memories/{id}?as_of={at}"), &token)
                .await;
            assert_eq!(without_as_of(folded), *memory, "{id} as of {at}");
        }
    }
}

/// During random sequences of writes, revisions, supersedes and merges by
/// review, archives, restores, deletions and review decisions, the ordinary
/// reads are snapshotted with their instants; afterwards the as-of reads at
/// each instant give exactly those snapshots.
#[test]
fn as_of_reads_give_what_the_ordinary_reads_gave_at_each_instant() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let app = runtime.block_on(spawn_app());
    let cases = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(op(), 1..8), |ops| {
            let subject = format!("prop-{}", cases.fetch_add(1, Ordering::SeqCst));
            runtime.block_on(async {
                let snapshots = run(&app, &subject, &ops).await;
                check(&app, &subject, &snapshots).await;
            });
            Ok(())
        })
        .unwrap();
}

// ---------------------------------------------------------------- changes

/// A known sequence gives exactly its changes, with the memory before and
/// after each, who did it and why; a window gives only what is inside it,
/// and pages follow each other.
#[tokio::test]
async fn changes_between_two_instants_are_exact() {
    let app = spawn_app().await;
    let alice = app.token_as("acme", "alice", &Scope::ALL, None);
    let bob = app.token_as("acme", "bob", &Scope::ALL, None);
    let carol = app.token_as("acme", "carol", &Scope::ALL, None);
    let t0 = instant().await;
    let a = app.memory(&alice, "dora", "Drinks coffee").await;
    let t1 = instant().await;
    let revised = app
        .call(
            Method::PATCH,
            &format!("/v1/memories/{a}"),
            &bob,
            Some(json!({"content": "Drinks tea", "reason": "she switched"})),
        )
        .await;
    assert_eq!(revised.status(), 200);
    app.state_change(
        "acme",
        &a,
        DomainEvent::MemoryArchived(MemoryStateChanged {
            reason: Some(SubjectText::new("idle for 90 days")),
        }),
        "dora",
    )
    .await;
    let t2 = instant().await;
    app.state_change(
        "acme",
        &a,
        DomainEvent::MemoryRestored(MemoryStateChanged::default()),
        "dora",
    )
    .await;
    let deleted = app
        .call(
            Method::DELETE,
            &format!("/v1/memories/{a}"),
            &alice,
            Some(json!({"reason": "asked to forget"})),
        )
        .await;
    assert_eq!(deleted.status(), 200);
    let review = app
        .held("acme", "dora", "Likes jazz", ProposedAction::Create, None)
        .await;
    let resolved = app
        .decide(
            &carol,
            &review,
            json!({"decision": "approve", "note": "checked with her"}),
        )
        .await;
    let b = resolved["memory"]["id"].as_str().unwrap().to_owned();
    let t3 = instant().await;
    // Another subject's and another tenant's changes are not the subject's.
    app.memory(&alice, "erik", "Plays chess").await;
    let other = app.admin("globex");
    app.memory(&other, "dora", "Globex's own").await;

    let body = app
        .get_json(
            &format!(
                "/v1/subjects/dora/changes?from={}&to={}",
                stamp(t0),
                stamp(t3)
            ),
            &alice,
        )
        .await;
    assert_eq!(body["next_cursor"], Value::Null);
    let items = body["items"].as_array().unwrap();
    let summary: Vec<(String, &str, &str, &str, Value)> = items
        .iter()
        .map(|i| {
            (
                i["memory_id"].as_str().unwrap_or("-").to_owned(),
                i["change"].as_str().unwrap(),
                i["event_type"].as_str().unwrap(),
                i["actor"].as_str().unwrap(),
                i["reason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (a.clone(), "created", "MemoryCreated", "alice", Value::Null),
            (
                a.clone(),
                "revised",
                "MemoryRevised",
                "bob",
                json!("she switched")
            ),
            (
                a.clone(),
                "archived",
                "MemoryArchived",
                "forgetter",
                json!("idle for 90 days")
            ),
            (
                a.clone(),
                "restored",
                "MemoryRestored",
                "forgetter",
                Value::Null
            ),
            (
                a.clone(),
                "deleted",
                "MemoryDeleted",
                "alice",
                json!("asked to forget")
            ),
            (
                b.clone(),
                "reviewed",
                "ReviewResolved",
                "carol",
                json!("checked with her")
            ),
            (b.clone(), "created", "MemoryCreated", "carol", Value::Null),
        ]
    );
    // Before and after each change.
    let content = |v: &Value| v["content"].clone();
    let state = |v: &Value| v["state"].clone();
    assert_eq!(items[0]["before"], Value::Null);
    assert_eq!(content(&items[0]["after"]), "Drinks coffee");
    assert_eq!(content(&items[1]["before"]), "Drinks coffee");
    assert_eq!(content(&items[1]["after"]), "Drinks tea");
    assert_eq!(items[1]["after"]["version"], 2);
    assert_eq!(state(&items[2]["before"]), "active");
    assert_eq!(state(&items[2]["after"]), "archived");
    assert_eq!(state(&items[3]["after"]), "active");
    assert_eq!(state(&items[4]["before"]), "active");
    assert_eq!(state(&items[4]["after"]), "deleted");
    assert_eq!(content(&items[4]["after"]), "Drinks tea");
    // The decision comes before the memory it creates.
    assert_eq!(items[5]["before"], Value::Null);
    assert_eq!(items[5]["after"], Value::Null);
    assert_eq!(
        items[5]["review"],
        json!({"id": review, "decision": "approve"})
    );
    assert_eq!(items[6]["before"], Value::Null);
    assert_eq!(content(&items[6]["after"]), "Likes jazz");
    // The producer of a created memory; none for other changes.
    assert_eq!(
        items[0]["producer"],
        json!({"strategy": "api", "model": null, "prompt_version": null})
    );
    assert_eq!(
        items[6]["producer"],
        json!({"strategy": "llm", "model": "test-model", "prompt_version": "extract-v1"})
    );
    assert!(items[1..6].iter().all(|i| i["producer"].is_null()));
    assert!(items[..5].iter().all(|i| i["review"].is_null()));
    for item in items {
        assert!(item["at"].as_str().unwrap() > stamp(t0).as_str());
        assert!(item["event_id"].as_str().is_some());
    }

    // (t1, t2]: the revision and the archive only.
    let window = app
        .get_json(
            &format!(
                "/v1/subjects/dora/changes?from={}&to={}",
                stamp(t1),
                stamp(t2)
            ),
            &alice,
        )
        .await;
    let changes: Vec<&str> = window["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["change"].as_str().unwrap())
        .collect();
    assert_eq!(changes, ["revised", "archived"]);

    // Pages of 3 (and `to` defaulting to now), in order, none lost.
    let mut paged = Vec::new();
    let mut cursor = String::new();
    for expected_next in [true, true, false] {
        let page = app
            .get_json(
                &format!(
                    "/v1/subjects/dora/changes?from={}&limit=3{cursor}",
                    stamp(t0)
                ),
                &alice,
            )
            .await;
        paged.extend(page["items"].as_array().unwrap().clone());
        assert_eq!(page["next_cursor"].is_string(), expected_next, "{page}");
        if let Some(next) = page["next_cursor"].as_str() {
            cursor = format!("&cursor={next}");
        }
    }
    assert_eq!(&paged[..], &items[..]);
}

// ---------------------------------------------------------------- refusals

#[tokio::test]
async fn bad_instants_missing_memories_and_other_tenants_are_refused() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let before = instant().await;
    let id = app.memory(&token, "dora", "Grows tomatoes").await;
    let now = stamp(instant().await);

    for path in [
        format!("/v1/memories/{id}?as_of=yesterday"),
        "/v1/subjects/dora/memories?as_of=2026-13-01T00:00:00Z".to_owned(),
        "/v1/subjects/dora/profile?as_of=1700000000".to_owned(),
    ] {
        assert_error(app.get(&path, &token).await, 400, "invalid_as_of").await;
    }
    assert_error(
        app.get("/v1/subjects/dora/changes", &token).await,
        400,
        "missing_parameter",
    )
    .await;
    assert_error(
        app.get("/v1/subjects/dora/changes?from=monday", &token)
            .await,
        400,
        "invalid_time",
    )
    .await;
    assert_error(
        app.get(
            &format!("/v1/subjects/dora/changes?from={now}&to={now}"),
            &token,
        )
        .await,
        400,
        "invalid_range",
    )
    .await;
    assert_error(
        app.get(
            &format!("/v1/subjects/dora/changes?from={}&cursor=x", stamp(before)),
            &token,
        )
        .await,
        400,
        "invalid_cursor",
    )
    .await;

    // Before its first event, the memory did not exist.
    assert_error(
        app.get(
            &format!("/v1/memories/{id}?as_of={}", stamp(before)),
            &token,
        )
        .await,
        404,
        "memory_not_found",
    )
    .await;
    let then = app
        .get_json(
            &format!("/v1/subjects/dora/memories?as_of={}", stamp(before)),
            &token,
        )
        .await;
    assert_eq!(then["memories"], json!([]));
    let found = app
        .get_json(&format!("/v1/memories/{id}?as_of={now}"), &token)
        .await;
    assert_eq!(found["content"], "Grows tomatoes");
    assert_eq!(found["as_of"]["at"].as_str().unwrap(), now);
    assert_eq!(found["as_of"]["event"]["type"], "MemoryCreated");

    // Another tenant's memory is a missing one, also in the past; its
    // subject of the same name has nothing of this tenant's.
    let other = app.admin("globex");
    assert_error(
        app.get(&format!("/v1/memories/{id}?as_of={now}"), &other)
            .await,
        404,
        "memory_not_found",
    )
    .await;
    let theirs = app
        .get_json(&format!("/v1/subjects/dora/memories?as_of={now}"), &other)
        .await;
    assert_eq!(theirs["memories"], json!([]));
    let changes = app
        .get_json(
            &format!("/v1/subjects/dora/changes?from={}", stamp(before)),
            &other,
        )
        .await;
    assert_eq!(changes["items"], json!([]));

    // A token bound to another subject, or without the read scope.
    let erik = app.token("acme", &[Scope::MemoriesRead], Some("erik"));
    assert_error(
        app.get(&format!("/v1/memories/{id}?as_of={now}"), &erik)
            .await,
        403,
        "subject_forbidden",
    )
    .await;
    assert_error(
        app.get(
            &format!("/v1/subjects/dora/changes?from={}", stamp(before)),
            &erik,
        )
        .await,
        403,
        "subject_forbidden",
    )
    .await;
    let writer = app.token("acme", &[Scope::MemoriesWrite], None);
    assert_error(
        app.get(&format!("/v1/subjects/dora/memories?as_of={now}"), &writer)
            .await,
        403,
        "insufficient_scope",
    )
    .await;
}

/// The profile as of an instant is the last update recorded by then.
#[tokio::test]
async fn the_profile_as_of_an_instant_is_the_update_of_then() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let update = |summary: &str| {
        DomainEvent::ProfileUpdated(ProfileUpdated {
            summary: SubjectText::new(summary),
            memory_ids: Vec::new(),
            covers_position: 0,
            producer: None,
        })
    };
    let tenant = TenantId::parse("acme").unwrap();
    let dora = SubjectId::parse("dora").unwrap();
    let stream = streams::profile(&dora);
    let append = |event: DomainEvent| {
        app.log.append_one(
            &tenant,
            &stream,
            ExpectedVersion::Any,
            Pending {
                event_id: EventId::new(),
                subject: Some(dora.clone()),
                event,
                metadata: actor("consolidator"),
            },
        )
    };
    let t0 = instant().await;
    append(update("Likes tea")).await.unwrap();
    let t1 = instant().await;
    append(update("Likes tea and jazz")).await.unwrap();

    assert_error(
        app.get(
            &format!("/v1/subjects/dora/profile?as_of={}", stamp(t0)),
            &token,
        )
        .await,
        404,
        "profile_not_found",
    )
    .await;
    let then = app
        .get_json(
            &format!("/v1/subjects/dora/profile?as_of={}", stamp(t1)),
            &token,
        )
        .await;
    assert_eq!(then["summary"], "Likes tea");
    assert_eq!(then["version"], 1);
    assert_eq!(then["as_of"]["event"]["type"], "ProfileUpdated");
    assert_eq!(then["as_of"]["event"]["actor"], "consolidator");
    let now = app.get_json("/v1/subjects/dora/profile", &token).await;
    assert_eq!(now["summary"], "Likes tea and jazz");
    assert!(now.get("as_of").is_none());
}

// ---------------------------------------------------------------- subjects

/// Checks the subject list on a running app (SQLite here, PostgreSQL in
/// `postgres.rs`): paging by subject id, the prefix, counts by state, the
/// binding of a subject-bound token, the scope.
pub async fn check_subject_list(app: &TestApp) {
    let token = app.admin("acme");
    for subject in ["user-b", "user-a", "bot-1", "user-c"] {
        app.memory(&token, subject, "something").await;
    }
    let gone = app.memory(&token, "user-a", "something else").await;
    let deleted = app
        .call(
            Method::DELETE,
            &format!("/v1/memories/{gone}"),
            &token,
            None,
        )
        .await;
    assert_eq!(deleted.status(), 200);
    app.memory(&app.admin("globex"), "user-z", "theirs").await;
    let first = app
        .wait_for(
            "/v1/subjects?limit=2",
            &token,
            "the subjects listed",
            // Both of user-a's rows: a run's rows are written one by one
            // after its points are durable, so a list may see one first.
            |body| {
                body["items"][1]["memories"]["deleted"] == 1
                    && body["items"][1]["memories"]["active"] == 1
            },
        )
        .await;
    let names = |body: &Value| -> Vec<String> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["subject"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&first), ["bot-1", "user-a"]);
    assert_eq!(
        first["items"][1]["memories"],
        json!({"active": 1, "pending_review": 0, "archived": 0, "superseded": 0, "deleted": 1})
    );
    assert!(first["items"][1]["last_activity"].is_string());
    let next = first["next_cursor"].as_str().unwrap();
    assert_eq!(next, "user-a");
    let second = app
        .get_json(&format!("/v1/subjects?limit=2&cursor={next}"), &token)
        .await;
    assert_eq!(names(&second), ["user-b", "user-c"]);
    let last = app
        .get_json("/v1/subjects?limit=2&cursor=user-c", &token)
        .await;
    assert_eq!(last["items"], json!([]));
    assert_eq!(last["next_cursor"], Value::Null);

    let users = app.get_json("/v1/subjects?prefix=user-", &token).await;
    assert_eq!(names(&users), ["user-a", "user-b", "user-c"]);
    assert_eq!(users["next_cursor"], Value::Null);

    let bound = app.token("acme", &[Scope::MemoriesRead], Some("user-b"));
    let own = app.get_json("/v1/subjects", &bound).await;
    assert_eq!(names(&own), ["user-b"]);
    let writer = app.token("acme", &[Scope::MemoriesWrite], None);
    assert_error(
        app.get("/v1/subjects", &writer).await,
        403,
        "insufficient_scope",
    )
    .await;
    assert_error(
        app.get("/v1/subjects?limit=0", &token).await,
        400,
        "invalid_limit",
    )
    .await;
    assert_error(
        app.get("/v1/subjects?cursor=a%20b", &token).await,
        400,
        "invalid_cursor",
    )
    .await;
}

#[tokio::test]
async fn subjects_are_listed_by_id_with_their_counts() {
    let app = spawn_app().await;
    check_subject_list(&app).await;
}
