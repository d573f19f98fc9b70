//! The review queue, its statistics, profiles, relations and graph
//! expansion. The consolidator's events (review requests, batch records,
//! relations, profiles) are appended straight to the server's log, as the
//! consolidator appends them.

use std::time::Duration;

use mnemo_auth::Scope;
use mnemo_domain::events::{
    streams, BatchConsolidated, ProfileUpdated, ProposedAction, RelationAdded, RelationKind,
    ReviewRequested, Route, RoutedCandidate,
};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, MemoryId, MemoryKind, Producer, SubjectId, SubjectText,
    TenantId,
};
use mnemo_event_store::sealed::Pending;
use mnemo_event_store::ExpectedVersion;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp};

fn consolidator() -> EventMetadata {
    EventMetadata {
        actor: "consolidator".to_owned(),
        ..Default::default()
    }
}

fn llm_producer() -> Producer {
    Producer {
        strategy: "llm".to_owned(),
        version: "1".to_owned(),
        model: Some("test-model".to_owned()),
        prompt_version: Some("extract-v1".to_owned()),
        fallback: None,
    }
}

/// A review request as the consolidator appends it: the first event of
/// `review-{id}`, about the subject.
struct Proposal<'a> {
    content: &'a str,
    kind: MemoryKind,
    confidence: f32,
    action: ProposedAction,
    target: Option<MemoryId>,
}

impl<'a> Proposal<'a> {
    fn new(content: &'a str) -> Self {
        Proposal {
            content,
            kind: MemoryKind::Preference,
            confidence: 0.7,
            action: ProposedAction::Create,
            target: None,
        }
    }
}

impl TestApp {
    async fn append(&self, tenant: &str, subject: &str, stream: &str, event: DomainEvent) {
        self.log
            .append(
                &TenantId::parse(tenant).unwrap(),
                stream,
                ExpectedVersion::Any,
                vec![Pending {
                    event_id: EventId::new(),
                    subject: Some(SubjectId::parse(subject).unwrap()),
                    event,
                    metadata: consolidator(),
                }],
            )
            .await
            .unwrap();
    }

    async fn request_review(&self, tenant: &str, subject: &str, proposal: Proposal<'_>) -> String {
        let review_id = MemoryId::new();
        let event = DomainEvent::ReviewRequested(ReviewRequested {
            review_id,
            proposed: SubjectText::new(proposal.content),
            kind: proposal.kind,
            confidence: proposal.confidence,
            source_event_ids: vec![EventId::derived(&[tenant, subject, "m1"])],
            tags: vec!["food".to_owned()],
            action: proposal.action,
            target: proposal.target,
            reason: Some(SubjectText::new("confidence in the review band")),
            reason_code: None,
            signals: Vec::new(),
            excerpt: Some(SubjectText::new("user: I think I like it")),
            producer: Some(llm_producer()),
            session: None,
            pii: Default::default(),
        });
        self.log
            .append(
                &TenantId::parse(tenant).unwrap(),
                &streams::review(&review_id),
                ExpectedVersion::NoStream,
                vec![Pending {
                    event_id: EventId::new(),
                    subject: Some(SubjectId::parse(subject).unwrap()),
                    event,
                    metadata: consolidator(),
                }],
            )
            .await
            .unwrap();
        review_id.to_string()
    }

    async fn batch(&self, tenant: &str, subject: &str, candidates: &[(f32, Route)]) {
        let event = DomainEvent::BatchConsolidated(BatchConsolidated {
            messages: 10,
            strategy: "llm".to_owned(),
            model: Some("test-model".to_owned()),
            prompt_version: None,
            fallback: None,
            llm_calls: 1,
            prompt_tokens: 100,
            completion_tokens: 20,
            candidates: candidates
                .iter()
                .map(|(confidence, route)| RoutedCandidate {
                    confidence: *confidence,
                    route: *route,
                })
                .collect(),
            created: 0,
            reinforced: 0,
            superseded: 0,
            suspected_injections: 0,
        });
        let stream = streams::consolidation(&SubjectId::parse(subject).unwrap());
        self.append(tenant, subject, &stream, event).await;
    }

    /// `from` is the `relation` of `to`, on both memories' streams.
    async fn relate(
        &self,
        tenant: &str,
        subject: &str,
        from: &str,
        to: &str,
        relation: RelationKind,
        confidence: f32,
    ) {
        let (from, to) = (MemoryId::parse(from).unwrap(), MemoryId::parse(to).unwrap());
        for end in [from, to] {
            let event = DomainEvent::RelationAdded(RelationAdded {
                from,
                to,
                relation,
                confidence,
            });
            self.log
                .append(
                    &TenantId::parse(tenant).unwrap(),
                    &streams::memory(&end),
                    ExpectedVersion::Any,
                    vec![Pending {
                        event_id: EventId::derived(&[
                            &from.to_string(),
                            &to.to_string(),
                            relation.as_str(),
                            &end.to_string(),
                        ]),
                        subject: Some(SubjectId::parse(subject).unwrap()),
                        event,
                        metadata: consolidator(),
                    }],
                )
                .await
                .unwrap();
        }
    }

    async fn update_profile(&self, tenant: &str, subject: &str, summary: &str) {
        let event = DomainEvent::ProfileUpdated(ProfileUpdated {
            summary: SubjectText::new(summary),
            memory_ids: vec![],
            covers_position: 0,
            producer: Some(llm_producer()),
        });
        let stream = streams::profile(&SubjectId::parse(subject).unwrap());
        self.append(tenant, subject, &stream, event).await;
    }

    async fn resolve(&self, token: &str, review_id: &str, body: Value) -> reqwest::Response {
        self.call(
            Method::POST,
            &format!("/v1/review/{review_id}"),
            token,
            Some(body),
        )
        .await
    }

    async fn resolved(&self, token: &str, review_id: &str, body: Value) -> Value {
        let response = self.resolve(token, review_id, body).await;
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 200, "{body}");
        body
    }

    fn reviewer(&self, tenant: &str) -> String {
        self.token_as(
            tenant,
            "reviewer-ann",
            &[Scope::MemoriesReview, Scope::MemoriesRead],
            None,
        )
    }
}

fn ids(reviews: &Value) -> Vec<String> {
    reviews["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

fn count_events(events: &[Value], event_type: &str) -> usize {
    events.iter().filter(|e| e["type"] == event_type).count()
}

#[tokio::test]
async fn pending_reviews_are_listed_oldest_first_without_resolved_ones_or_other_tenants() {
    let app = spawn_app().await;
    let first = app
        .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
        .await;
    let decided = app
        .request_review("acme", "u1", Proposal::new("Likes rooibos"))
        .await;
    let third = app
        .request_review("acme", "u2", Proposal::new("Prefers window seats"))
        .await;
    let other = app
        .request_review("globex", "u1", Proposal::new("Secret of globex"))
        .await;
    let token = app.reviewer("acme");
    app.resolved(&token, &decided, json!({"decision": "reject"}))
        .await;

    let page = app.get_json("/v1/review", &token).await;
    assert_eq!(ids(&page), [first.clone(), third.clone()]);
    assert_eq!(page["next_cursor"], Value::Null);
    let item = &page["reviews"][0];
    assert_eq!(item["subject"], "u1");
    assert_eq!(item["proposed"], "Likes oolong tea");
    assert_eq!(item["kind"], "preference");
    assert_eq!(item["tags"], json!(["food"]));
    assert_eq!(item["confidence"], 0.7);
    assert_eq!(item["action"], "create");
    assert_eq!(item["target"], Value::Null);
    assert_eq!(item["reason"], "confidence in the review band");
    assert_eq!(item["excerpt"], "user: I think I like it");
    assert_eq!(item["source_event_ids"].as_array().unwrap().len(), 1);
    assert_eq!(item["producer"]["strategy"], "llm");
    assert!(item["requested_at"].as_str().is_some());

    // Paged by an opaque cursor.
    let one = app.get_json("/v1/review?limit=1", &token).await;
    assert_eq!(ids(&one)[..], [first.as_str()]);
    let cursor = one["next_cursor"].as_str().unwrap();
    let two = app
        .get_json(&format!("/v1/review?limit=1&cursor={cursor}"), &token)
        .await;
    assert_eq!(ids(&two)[..], [third.as_str()]);

    let only_u2 = app.get_json("/v1/review?subject=u2", &token).await;
    assert_eq!(ids(&only_u2), [third]);

    let globex = app.get_json("/v1/review", &app.reviewer("globex")).await;
    assert_eq!(ids(&globex)[..], [other.as_str()]);
    // Another tenant's review cannot be decided either.
    let foreign = app
        .resolve(&token, &other, json!({"decision": "approve"}))
        .await;
    assert_error(foreign, 404, "review_not_found").await;
}

#[tokio::test]
async fn approving_a_review_creates_the_memory_with_its_provenance() {
    let app = spawn_app().await;
    let review = app
        .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
        .await;
    let token = app.reviewer("acme");
    let body = app
        .resolved(
            &token,
            &review,
            json!({"decision": "approve", "note": "seen it twice"}),
        )
        .await;
    assert_eq!(body["review"]["decision"], "approve");
    assert_eq!(body["review"]["resolved_by"], "reviewer-ann");
    assert_eq!(body["review"]["note"], "seen it twice");
    let memory_id = body["memory_id"].as_str().unwrap().to_owned();

    let memory = app
        .get_json(&format!("/v1/memories/{memory_id}"), &token)
        .await;
    assert_eq!(memory["content"], "Likes oolong tea");
    assert_eq!(memory["kind"], "preference");
    assert_eq!(memory["state"], "active");
    assert_eq!(memory["tags"], json!(["food"]));
    assert_eq!(memory["confidence"], 0.7);
    assert_eq!(memory["importance"], 0.75, "0.3 + 0.5·0.7 + 0.1");
    assert_eq!(memory["provenance"]["producer"]["strategy"], "llm");
    assert_eq!(
        memory["provenance"]["source_event_ids"][0],
        EventId::derived(&["acme", "u1", "m1"]).to_string()
    );
    let history = app
        .get_json(&format!("/v1/memories/{memory_id}/history"), &token)
        .await;
    assert_eq!(history["versions"][0]["actor"], "reviewer-ann");

    let page = app.get_json("/v1/review", &token).await;
    assert!(ids(&page).is_empty(), "{page}");
}

#[tokio::test]
async fn an_edit_stores_the_edited_content_scrubbed_of_pii() {
    let app = spawn_app().await;
    let review = app
        .request_review("acme", "u1", Proposal::new("Likes oolong"))
        .await;
    let token = app.reviewer("acme");
    let body = app
        .resolved(
            &token,
            &review,
            json!({
                "decision": "edit",
                "content": "Likes oolong tea; mail jane.doe@example.com for orders",
                "kind": "fact",
                "tags": ["Drinks"],
                "note": "asked jane.doe@example.com",
            }),
        )
        .await;
    let memory_id = body["memory_id"].as_str().unwrap();
    let memory = app
        .get_json(&format!("/v1/memories/{memory_id}"), &token)
        .await;
    let content = memory["content"].as_str().unwrap();
    assert!(content.starts_with("Likes oolong tea"), "{content}");
    assert!(!content.contains("jane.doe"), "{content}");
    assert!(content.contains("[EMAIL]"), "{content}");
    assert_eq!(memory["kind"], "fact");
    assert_eq!(memory["tags"], json!(["drinks"]));
    assert!(!body["review"]["note"]
        .as_str()
        .unwrap()
        .contains("jane.doe"));

    let events = app.all_events("acme").await;
    let resolved = events
        .iter()
        .find(|e| e["type"] == "ReviewResolved")
        .unwrap();
    assert_eq!(resolved["payload"]["pii"]["email"], 2, "content and note");
    assert_eq!(resolved["actor"], "reviewer-ann");
}

#[tokio::test]
async fn a_rejection_creates_no_memory() {
    let app = spawn_app().await;
    let review = app
        .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
        .await;
    let token = app.reviewer("acme");
    let body = app
        .resolved(
            &token,
            &review,
            json!({"decision": "reject", "note": "a joke"}),
        )
        .await;
    assert_eq!(body["memory_id"], Value::Null);
    assert_eq!(body["review"]["decision"], "reject");
    let events = app.all_events("acme").await;
    assert_eq!(count_events(&events, "ReviewResolved"), 1);
    assert_eq!(count_events(&events, "MemoryCreated"), 0);
}

#[tokio::test]
async fn a_second_different_decision_conflicts_and_the_same_one_is_idempotent() {
    let app = spawn_app().await;
    let review = app
        .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
        .await;
    let ann = app.reviewer("acme");
    let bob = app.token_as("acme", "reviewer-bob", &[Scope::MemoriesReview], None);
    let first = app
        .resolved(&ann, &review, json!({"decision": "approve"}))
        .await;

    let conflict = app
        .resolve(&bob, &review, json!({"decision": "reject"}))
        .await;
    assert_error(conflict, 409, "review_already_resolved").await;

    let again = app
        .resolved(&bob, &review, json!({"decision": "approve"}))
        .await;
    assert_eq!(again["memory_id"], first["memory_id"]);
    assert_eq!(again["review"]["resolved_by"], "reviewer-ann");
    let events = app.all_events("acme").await;
    assert_eq!(count_events(&events, "ReviewResolved"), 1);
    assert_eq!(count_events(&events, "MemoryCreated"), 1);
}

#[tokio::test]
async fn a_retried_approval_completes_the_memory_a_crash_left_out() {
    let app = spawn_app().await;
    let target = app
        .memory(&app.admin("acme"), "u1", "Likes green tea")
        .await;
    let review = app
        .request_review(
            "acme",
            "u1",
            Proposal {
                action: ProposedAction::Supersede,
                target: Some(MemoryId::parse(&target).unwrap()),
                ..Proposal::new("Likes oolong tea now")
            },
        )
        .await;
    // The decision was recorded, then the process died before the memory.
    let review_id = MemoryId::parse(&review).unwrap();
    app.log
        .append(
            &TenantId::parse("acme").unwrap(),
            &streams::review(&review_id),
            ExpectedVersion::Exact(1),
            vec![Pending {
                event_id: EventId::derived(&["acme", &review, "resolved", "approve"]),
                subject: Some(SubjectId::parse("u1").unwrap()),
                event: DomainEvent::ReviewResolved(mnemo_domain::events::ReviewResolved {
                    review_id,
                    decision: mnemo_domain::events::ReviewDecision::Approve,
                    edited: None,
                    kind: None,
                    tags: None,
                    memory_id: Some(mnemo_ingest::review::memory_id_for(&review_id)),
                    note: None,
                    pii: Default::default(),
                }),
                metadata: EventMetadata {
                    actor: "reviewer-ann".to_owned(),
                    ..Default::default()
                },
            }],
        )
        .await
        .unwrap();
    let token = app.reviewer("acme");
    let body = app
        .resolved(&token, &review, json!({"decision": "approve"}))
        .await;
    let memory_id = body["memory_id"].as_str().unwrap();
    let memory = app
        .get_json(&format!("/v1/memories/{memory_id}"), &token)
        .await;
    assert_eq!(memory["content"], "Likes oolong tea now");
    let old = app
        .get_json(&format!("/v1/memories/{target}"), &token)
        .await;
    assert_eq!(old["state"], "superseded");
    let events = app.all_events("acme").await;
    assert_eq!(count_events(&events, "ReviewResolved"), 1);
    assert_eq!(count_events(&events, "MemorySuperseded"), 1);
}

async fn approve_action(action: ProposedAction, event_type: &str) {
    let app = spawn_app().await;
    let admin = app.admin("acme");
    let target = app.memory(&admin, "u1", "Likes green tea").await;
    let review = app
        .request_review(
            "acme",
            "u1",
            Proposal {
                action,
                target: Some(MemoryId::parse(&target).unwrap()),
                ..Proposal::new("Likes green tea, unsweetened")
            },
        )
        .await;
    let token = app.reviewer("acme");
    let body = app
        .resolved(&token, &review, json!({"decision": "approve"}))
        .await;
    let memory_id = body["memory_id"].as_str().unwrap();
    assert_eq!(body["review"]["action"], action.as_str());

    let old = app
        .get_json(&format!("/v1/memories/{target}"), &token)
        .await;
    assert_eq!(old["state"], "superseded");
    assert_eq!(old["superseded_by"], memory_id);
    let history = app
        .get_json(&format!("/v1/memories/{target}/history"), &token)
        .await;
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0]["memory"]["content"], "Likes green tea");
    assert_eq!(versions[1]["event_type"], event_type);
    assert_eq!(versions[1]["actor"], "reviewer-ann");

    // A retry adds nothing to the target's history.
    app.resolved(&token, &review, json!({"decision": "approve"}))
        .await;
    let history = app
        .get_json(&format!("/v1/memories/{target}/history"), &token)
        .await;
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn approving_a_supersede_leaves_the_target_superseded_with_history() {
    approve_action(ProposedAction::Supersede, "MemorySuperseded").await;
}

#[tokio::test]
async fn approving_a_merge_into_leaves_the_target_merged_with_history() {
    approve_action(ProposedAction::MergeInto, "MemoryMerged").await;
}

#[tokio::test]
async fn review_endpoints_need_the_review_scope() {
    let app = spawn_app().await;
    let review = app
        .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
        .await;
    let token = app.token("acme", &[Scope::MemoriesRead, Scope::MemoriesWrite], None);
    assert_error(
        app.get("/v1/review", &token).await,
        403,
        "insufficient_scope",
    )
    .await;
    assert_error(
        app.get("/v1/review/stats", &token).await,
        403,
        "insufficient_scope",
    )
    .await;
    assert_error(
        app.resolve(&token, &review, json!({"decision": "approve"}))
            .await,
        403,
        "insufficient_scope",
    )
    .await;
    let events = app.all_events("acme").await;
    assert_eq!(count_events(&events, "ReviewResolved"), 0);
}

#[tokio::test]
async fn bad_review_bodies_are_refused_with_json_errors() {
    let app = spawn_app().await;
    let review = app
        .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
        .await;
    let token = app.reviewer("acme");
    for (body, code) in [
        (json!({"decision": "edit"}), "content_required"),
        (
            json!({"decision": "approve", "content": "x"}),
            "content_not_allowed",
        ),
        (
            json!({"decision": "reject", "tags": ["a"]}),
            "edit_only_field",
        ),
        (json!({"decision": "maybe"}), "invalid_body"),
        (json!({"decision": "approve", "extra": 1}), "invalid_body"),
    ] {
        assert_error(app.resolve(&token, &review, body).await, 400, code).await;
    }
    let unknown = MemoryId::new().to_string();
    assert_error(
        app.resolve(&token, &unknown, json!({"decision": "approve"}))
            .await,
        404,
        "review_not_found",
    )
    .await;
    assert_error(
        app.get("/v1/review?limit=500", &token).await,
        400,
        "invalid_limit",
    )
    .await;
    assert_error(
        app.get("/v1/review/stats?days=0", &token).await,
        400,
        "invalid_days",
    )
    .await;
    // Nothing was decided by the refused requests.
    let page = app.get_json("/v1/review", &token).await;
    assert_eq!(ids(&page), [review]);
}

#[tokio::test]
async fn review_stats_count_candidates_thresholds_and_decisions() {
    let app = spawn_app().await;
    use Route::{Discarded, Memory, Review};
    app.batch(
        "acme",
        "u1",
        &[
            (0.3, Discarded),
            (0.62, Review),
            (0.7, Review),
            (0.9, Memory),
            (0.95, Memory),
        ],
    )
    .await;
    app.batch("acme", "u2", &[(0.5, Discarded), (0.86, Memory)])
        .await;
    app.batch("globex", "u1", &[(0.99, Memory)]).await;
    let token = app.reviewer("acme");
    for decision in ["approve", "edit", "reject"] {
        let review = app
            .request_review("acme", "u1", Proposal::new("Likes oolong tea"))
            .await;
        let mut body = json!({"decision": decision});
        if decision == "edit" {
            body["content"] = json!("Likes oolong tea a lot");
        }
        app.resolved(&token, &review, body).await;
    }
    app.request_review("acme", "u2", Proposal::new("Prefers aisle seats"))
        .await;

    let stats = app.get_json("/v1/review/stats", &token).await;
    assert_eq!(stats["days"], 30);
    assert_eq!(stats["batches"], 2);
    assert_eq!(stats["candidates"], 7);
    assert_eq!(
        stats["routed"],
        json!({"memory": 3, "review": 2, "discarded": 2})
    );
    // The default policy: review threshold 0.6, auto threshold 0.85 (LLM).
    assert_eq!(stats["thresholds"], json!({"auto": 0.85, "review": 0.6}));
    assert_eq!(
        stats["current_split"],
        json!({"auto_accepted": 3, "review": 2, "discarded": 2})
    );
    let grid = stats["grid"].as_array().unwrap();
    assert_eq!(grid.len(), 19);
    let at = |t: f64| {
        grid.iter()
            .find(|g| (g["threshold"].as_f64().unwrap() - t).abs() < 1e-6)
            .unwrap_or_else(|| panic!("no {t} in {grid:?}"))
            .clone()
    };
    assert_eq!(
        at(0.05),
        json!({"threshold": 0.05, "auto_accepted": 7, "discarded": 0})
    );
    assert_eq!(
        at(0.5),
        json!({"threshold": 0.5, "auto_accepted": 6, "discarded": 1})
    );
    assert_eq!(
        at(0.7),
        json!({"threshold": 0.7, "auto_accepted": 4, "discarded": 3})
    );
    assert_eq!(
        at(0.9),
        json!({"threshold": 0.9, "auto_accepted": 2, "discarded": 5})
    );
    assert_eq!(
        at(0.95),
        json!({"threshold": 0.95, "auto_accepted": 1, "discarded": 6})
    );
    let reviews = &stats["reviews"];
    assert_eq!(
        reviews["decided"],
        json!({"approve": 1, "edit": 1, "reject": 1})
    );
    assert_eq!(reviews["total_decided"], 3);
    let rate = reviews["acceptance_rate"].as_f64().unwrap();
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
    assert_eq!(reviews["pending"], 1);

    let u2 = app.get_json("/v1/review/stats?subject=u2", &token).await;
    assert_eq!(u2["candidates"], 2);
    assert_eq!(u2["reviews"]["pending"], 1);

    let globex = app
        .get_json("/v1/review/stats", &app.reviewer("globex"))
        .await;
    assert_eq!(globex["candidates"], 1);
    assert_eq!(globex["reviews"]["acceptance_rate"], Value::Null);
    assert_eq!(globex["reviews"]["pending"], 0);
}

/// A subject-bound token is about one subject, whatever its scopes: the
/// tenant-wide statistics and cost report are not for it.
#[tokio::test]
async fn a_subject_bound_token_gets_its_own_subject_in_the_stats_and_the_report() {
    let app = spawn_app().await;
    use Route::{Discarded, Memory};
    app.batch("acme", "u1", &[(0.9, Memory), (0.3, Discarded)])
        .await;
    app.batch(
        "acme",
        "u2",
        &[(0.9, Memory), (0.95, Memory), (0.2, Discarded)],
    )
    .await;
    app.batch("acme", "u2", &[(0.99, Memory)]).await;
    app.request_review("acme", "u2", Proposal::new("Prefers aisle seats"))
        .await;
    let scopes = [Scope::MemoriesReview, Scope::AuditRead];
    let bound = app.token("acme", &scopes, Some("u1"));
    let unbound = app.token("acme", &scopes, None);

    let stats = app.get_json("/v1/review/stats", &bound).await;
    assert_eq!(stats["batches"], 1);
    assert_eq!(stats["candidates"], 2);
    assert_eq!(stats["reviews"]["pending"], 0);
    let own = app.get_json("/v1/review/stats?subject=u1", &bound).await;
    assert_eq!(own["candidates"], 2);
    assert_error(
        app.get("/v1/review/stats?subject=u2", &bound).await,
        403,
        "subject_forbidden",
    )
    .await;
    let tenant = app.get_json("/v1/review/stats", &unbound).await;
    assert_eq!(tenant["candidates"], 6);
    assert_eq!(tenant["reviews"]["pending"], 1);

    let report = app.get_json("/v1/consolidation/report", &bound).await;
    assert_eq!(report["subject"], "u1");
    assert_eq!(report["report"]["totals"]["batches"], 1);
    assert_eq!(report["report"]["totals"]["messages"], 10);
    assert_eq!(report["report"]["candidates"]["memory"], 1);
    let report = app.get_json("/v1/consolidation/report", &unbound).await;
    assert_eq!(report["subject"], Value::Null);
    assert_eq!(report["report"]["totals"]["batches"], 3);
    assert_eq!(report["report"]["totals"]["messages"], 30);
}

#[tokio::test]
async fn the_profile_is_404_until_updated_then_the_latest_wins_and_context_includes_it() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    assert_error(
        app.get("/v1/subjects/u1/profile", &token).await,
        404,
        "profile_not_found",
    )
    .await;
    app.update_profile("acme", "u1", "Drinks tea.").await;
    app.update_profile("acme", "u1", "Drinks oolong tea; vegetarian.")
        .await;
    let profile = app.get_json("/v1/subjects/u1/profile", &token).await;
    assert_eq!(profile["subject"], "u1");
    assert_eq!(profile["summary"], "Drinks oolong tea; vegetarian.");
    assert_eq!(profile["version"], 2);
    assert_eq!(profile["producer"]["strategy"], "llm");
    assert!(profile["updated_at"].as_str().is_some());
    // Another tenant's subject of the same name has none.
    assert_error(
        app.get("/v1/subjects/u1/profile", &app.admin("globex"))
            .await,
        404,
        "profile_not_found",
    )
    .await;

    app.memory(&token, "u1", "Orders oolong tea every morning")
        .await;
    app.wait_for_list(&token, "u1", |m| m.len() == 1).await;
    let messages = json!([{"role": "user", "content": "what tea should I order?"}]);
    let with = app
        .post_json(
            "/v1/subjects/u1/context",
            &token,
            json!({"messages": messages, "include_profile": true}),
        )
        .await;
    let block = with["block"].as_str().unwrap();
    assert!(
        block.starts_with("Profile of the user:\nDrinks oolong tea; vegetarian.\n"),
        "{block}"
    );
    assert!(block.contains("oolong tea every morning"), "{block}");
    assert_eq!(with["profile"]["summary"], "Drinks oolong tea; vegetarian.");
    let without = app
        .post_json(
            "/v1/subjects/u1/context",
            &token,
            json!({"messages": messages}),
        )
        .await;
    assert!(!without["block"].as_str().unwrap().contains("Profile"));
    assert_eq!(without["profile"], Value::Null);
    assert!(
        with["tokens"].as_u64().unwrap() > without["tokens"].as_u64().unwrap(),
        "the profile counts against the budget"
    );
}

#[tokio::test]
async fn relations_are_visible_on_both_memories() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let old = app.memory(&token, "u1", "Is vegetarian").await;
    let new = app.memory(&token, "u1", "Ate a steak yesterday").await;
    app.relate("acme", "u1", &new, &old, RelationKind::Contradicts, 0.8)
        .await;
    for id in [&old, &new] {
        let memory = app.get_json(&format!("/v1/memories/{id}"), &token).await;
        assert_eq!(
            memory["relations"],
            json!([{"from": new, "to": old, "relation": "contradicts", "confidence": 0.8}]),
            "{id}"
        );
    }
}

#[tokio::test]
async fn a_why_search_returns_the_premise_chain_marked_with_via() {
    let app = spawn_app().await;
    let token = app.admin("acme");
    let allergy = app.memory(&token, "u1", "Allergic to dairy").await;
    let avoid = app
        .memory(&token, "u1", "Avoids cheese and cream dishes")
        .await;
    let decision = app
        .memory(&token, "u1", "Decided to order the mushroom risotto")
        .await;
    // A memory of another subject is never pulled in, even if related.
    let stranger = app.memory(&token, "u2", "Allergic to dairy too").await;
    app.relate("acme", "u1", &avoid, &decision, RelationKind::Premise, 0.9)
        .await;
    app.relate("acme", "u1", &allergy, &avoid, RelationKind::Cause, 0.8)
        .await;
    app.relate(
        "acme",
        "u2",
        &stranger,
        &decision,
        RelationKind::Premise,
        0.9,
    )
    .await;

    let search = |depth: Option<u8>| {
        let mut body = json!({"query": "why the mushroom risotto?", "k": 2, "mode": "keyword"});
        if let Some(depth) = depth {
            body["expand_depth"] = json!(depth);
        }
        body
    };
    // The read model follows the log through the relay: wait for the chain.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let results = loop {
        let body = app
            .post_json("/v1/subjects/u1/search", &token, search(None))
            .await;
        let results = body["results"].as_array().unwrap().clone();
        if results.len() == 3 || tokio::time::Instant::now() > deadline {
            break results;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["memory"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [&decision, &avoid, &allergy], "{results:?}");
    assert_eq!(results[0]["via"], Value::Null);
    assert_eq!(
        results[1]["via"],
        json!({"relation": "premise", "of": decision})
    );
    assert_eq!(results[2]["via"], json!({"relation": "cause", "of": avoid}));
    let score = |i: usize| results[i]["score"].as_f64().unwrap();
    assert!((score(1) - score(0) * 0.9).abs() < 1e-4);
    assert!((score(2) - score(1) * 0.8).abs() < 1e-4);

    let one_hop = app
        .post_json("/v1/subjects/u1/search", &token, search(Some(1)))
        .await;
    assert_eq!(one_hop["results"].as_array().unwrap().len(), 2);
    let direct = app
        .post_json("/v1/subjects/u1/search", &token, search(Some(0)))
        .await;
    let direct = direct["results"].as_array().unwrap();
    assert_eq!(direct.len(), 1);
    assert_eq!(direct[0]["memory"]["id"], decision.as_str());
    assert_error(
        app.call(
            Method::POST,
            "/v1/subjects/u1/search",
            &token,
            Some(search(Some(3))),
        )
        .await,
        422,
        "invalid_expand_depth",
    )
    .await;

    // The context of a "why" question carries the chain too.
    let context = app
        .post_json(
            "/v1/subjects/u1/context",
            &token,
            json!({"messages": [{"role": "user", "content": "why the mushroom risotto?"}], "mode": "keyword", "max_memories": 2}),
        )
        .await;
    let block = context["block"].as_str().unwrap();
    assert!(block.contains("mushroom risotto"), "{block}");
    assert!(block.contains("Avoids cheese"), "{block}");
    assert!(block.contains("Allergic to dairy"), "{block}");
}

#[tokio::test]
async fn an_erased_subjects_reviews_leave_the_queue_and_the_pending_count() {
    let app = spawn_app().await;
    let token = app.reviewer("acme");
    app.request_review("acme", "kept", Proposal::new("likes oolong"))
        .await;
    app.request_review("acme", "gone", Proposal::new("likes matcha"))
        .await;
    let stats = app.get_json("/v1/review/stats", &token).await;
    assert_eq!(stats["reviews"]["pending"], 2);

    app.erase(&app.admin("acme"), "gone").await;
    let queue = app.get_json("/v1/review", &token).await;
    let subjects: Vec<&str> = queue["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["kept"]);
    let stats = app.get_json("/v1/review/stats", &token).await;
    assert_eq!(stats["reviews"]["pending"], 1);
}
