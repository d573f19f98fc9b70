//! The contract every `EventStore` adapter must honour. Each case takes an
//! `open` function that opens the SAME storage each time it is called (a new
//! instance is how a restart is simulated); [`event_store_contract_tests!`]
//! turns the cases into one test each for an adapter.

use std::future::Future;
use std::sync::Arc;

use chrono::{Duration, Utc};
use mnemo_domain::{EventId, EventMetadata, NewEvent, SubjectId, TenantId};
use serde_json::json;

use crate::{EventQuery, EventStore, EventStoreError, ExpectedVersion, StreamAppend};

pub fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).unwrap()
}

pub fn subject(name: &str) -> SubjectId {
    SubjectId::parse(name).unwrap()
}

/// A sealed-looking event (the store must not care what the ciphertext is).
pub fn event(event_type: &str, subject: Option<&SubjectId>, actor: &str) -> NewEvent {
    NewEvent {
        event_id: EventId::new(),
        event_type: event_type.to_owned(),
        schema_version: 1,
        subject: subject.cloned(),
        payload: json!({"content": {"$sealed": {"kid": "k1", "ct": "AAAA"}}, "n": 1}),
        metadata: EventMetadata {
            actor: actor.to_owned(),
            correlation_id: Some("corr-1".into()),
            causation_id: None,
            traceparent: None,
        },
    }
}

/// Waits (bounded) until the head has reached `position`. A store may show
/// a committed event to the relay only once every older transaction has
/// ended (PostgreSQL: the snapshot's xmin), so "appended" and "readable by
/// `read_all`" are a moment apart; SQLite returns at once.
pub async fn wait_for_head(store: &dyn EventStore, position: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.head_position().await.unwrap() < position {
        assert!(
            std::time::Instant::now() < deadline,
            "head never reached {position}"
        );
        store
            .wait_for_append(position - 1, std::time::Duration::from_millis(200))
            .await;
    }
}

pub async fn appends_and_reads_a_stream_in_order<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    let s = subject("s1");
    let events: Vec<_> = (0..3)
        .map(|_| event("MessageReceived", Some(&s), "alice"))
        .collect();
    let ids: Vec<_> = events.iter().map(|e| e.event_id).collect();
    let result = store
        .append(&t, "conversation-s1", ExpectedVersion::NoStream, events)
        .await
        .unwrap();
    assert_eq!(result.stream_version, 3);
    assert!(result.events.iter().all(|e| !e.duplicate));
    let stream = store.read_stream(&t, "conversation-s1").await.unwrap();
    assert_eq!(stream.iter().map(|e| e.event_id).collect::<Vec<_>>(), ids);
    assert_eq!(
        stream.iter().map(|e| e.stream_version).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(stream
        .windows(2)
        .all(|w| w[0].global_position < w[1].global_position));
    assert_eq!(stream[0].metadata.actor, "alice");
    assert_eq!(stream[0].metadata.correlation_id.as_deref(), Some("corr-1"));
    assert_eq!(stream[0].subject.as_ref(), Some(&s));
    assert_eq!(stream[0].payload["content"]["$sealed"]["kid"], "k1");
    assert!(store.read_stream(&t, "missing").await.unwrap().is_empty());

    // A range is inclusive at both ends, clipped to what exists, and
    // scoped to the tenant.
    let range = store
        .read_stream_range(&t, "conversation-s1", 2, 3)
        .await
        .unwrap();
    assert_eq!(
        range.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        ids[1..]
    );
    let clipped = store
        .read_stream_range(&t, "conversation-s1", 0, 1)
        .await
        .unwrap();
    assert_eq!(clipped.len(), 1);
    assert_eq!(clipped[0].event_id, ids[0]);
    assert!(store
        .read_stream_range(&t, "conversation-s1", 4, 9)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .read_stream_range(&tenant("t2"), "conversation-s1", 1, 3)
        .await
        .unwrap()
        .is_empty());
}

pub async fn refuses_a_stale_expected_version<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    store
        .append(
            &t,
            "memory-1",
            ExpectedVersion::NoStream,
            vec![event("MemoryCreated", None, "a")],
        )
        .await
        .unwrap();
    let again = store
        .append(
            &t,
            "memory-1",
            ExpectedVersion::NoStream,
            vec![event("MemoryCreated", None, "a")],
        )
        .await;
    assert!(matches!(
        again,
        Err(EventStoreError::Conflict { actual: 1, .. })
    ));
    let stale = store
        .append(
            &t,
            "memory-1",
            ExpectedVersion::Exact(5),
            vec![event("MemoryRevised", None, "a")],
        )
        .await;
    assert!(matches!(stale, Err(EventStoreError::Conflict { .. })));
    let ok = store
        .append(
            &t,
            "memory-1",
            ExpectedVersion::Exact(1),
            vec![event("MemoryRevised", None, "a")],
        )
        .await
        .unwrap();
    assert_eq!(ok.stream_version, 2);
    assert_eq!(store.read_stream(&t, "memory-1").await.unwrap().len(), 2);
}

pub async fn concurrent_writers_with_the_same_expectation_one_wins<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    store
        .append(
            &t,
            "memory-2",
            ExpectedVersion::NoStream,
            vec![event("MemoryCreated", None, "a")],
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            store
                .append(
                    &t,
                    "memory-2",
                    ExpectedVersion::Exact(1),
                    vec![event("MemoryRevised", None, "a")],
                )
                .await
        }));
    }
    let mut wins = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => wins += 1,
            Err(EventStoreError::Conflict { .. }) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    assert_eq!(wins, 1);
    assert_eq!(store.read_stream(&t, "memory-2").await.unwrap().len(), 2);
}

pub async fn append_is_idempotent_on_event_id<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    let first = event("MessageReceived", None, "a");
    let second = event("MessageReceived", None, "a");
    let original = store
        .append(
            &t,
            "conversation-x",
            ExpectedVersion::Any,
            vec![first.clone()],
        )
        .await
        .unwrap();
    // A full retry succeeds even with a version check that no longer holds.
    let retry = store
        .append(
            &t,
            "conversation-x",
            ExpectedVersion::NoStream,
            vec![first.clone()],
        )
        .await
        .unwrap();
    assert!(retry.events[0].duplicate);
    assert_eq!(
        retry.events[0].global_position,
        original.events[0].global_position
    );
    // A batch mixing old and new writes only the new one.
    let mixed = store
        .append(
            &t,
            "conversation-x",
            ExpectedVersion::Any,
            vec![first.clone(), second.clone()],
        )
        .await
        .unwrap();
    assert!(mixed.events[0].duplicate);
    assert!(!mixed.events[1].duplicate);
    assert_eq!(
        store.read_stream(&t, "conversation-x").await.unwrap().len(),
        2
    );
    // The same id in another stream or tenant is not silently accepted.
    let elsewhere = store
        .append(
            &t,
            "conversation-y",
            ExpectedVersion::Any,
            vec![first.clone()],
        )
        .await;
    assert!(matches!(elsewhere, Err(EventStoreError::EventIdTaken(_))));
    let other_tenant = store
        .append(
            &tenant("t2"),
            "conversation-x",
            ExpectedVersion::Any,
            vec![first],
        )
        .await;
    assert!(matches!(
        other_tenant,
        Err(EventStoreError::EventIdTaken(_))
    ));
}

pub async fn read_all_is_in_commit_order_without_gaps<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let start = store.head_position().await.unwrap();
    let mut expected = Vec::new();
    let mut last = start;
    for i in 0..10 {
        let t = tenant(if i % 2 == 0 { "t1" } else { "t2" });
        let e = event("MessageReceived", None, "a");
        expected.push(e.event_id);
        let appended = store
            .append(&t, &format!("s-{}", i % 3), ExpectedVersion::Any, vec![e])
            .await
            .unwrap();
        last = appended.events[0].global_position;
    }
    wait_for_head(store.as_ref(), last).await;
    let mut seen = Vec::new();
    let mut after = start;
    loop {
        let page = store.read_all(after, 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        for e in &page {
            assert!(e.global_position > after, "positions increase");
            after = e.global_position;
            seen.push(e.event_id);
        }
    }
    assert_eq!(seen, expected);
    assert_eq!(store.head_position().await.unwrap(), after);
}

/// What the relay publishes is what `read_all` returns, serialized: the
/// same JSON for every field (with and without a subject, with trace
/// context and ids in the metadata, text that needs escaping), and the
/// same parts to route and key it by.
pub async fn read_all_encoded_is_what_read_all_serializes<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let start = store.head_position().await.unwrap();
    let s = subject("s.1:x");
    let mut traced = event("MessageReceived", Some(&s), "actor \u{e9}");
    traced.metadata.traceparent =
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
    traced.metadata.causation_id = Some(EventId::new());
    traced.payload = json!({"content": {"$sealed": {"kid": "k1", "ct": "AA/+=="}}, "note": "a \"quoted\"\nline", "n": 2.5});
    let unsubjected = event("TenantPolicyChanged", None, "admin");
    let mut last = 0;
    for (stream, e) in [("conversation-s1", traced), ("tenant-policy", unsubjected)] {
        last = store
            .append(&tenant("t1"), stream, ExpectedVersion::Any, vec![e])
            .await
            .unwrap()
            .events[0]
            .global_position;
    }
    wait_for_head(store.as_ref(), last).await;
    let decoded = store.read_all(start, 10).await.unwrap();
    let encoded = store.read_all_encoded(start, 10).await.unwrap();
    assert_eq!(encoded.len(), 2);
    assert_eq!(decoded.len(), 2);
    for (event, encoded) in decoded.iter().zip(&encoded) {
        let wire: serde_json::Value = serde_json::from_slice(&encoded.envelope).unwrap();
        assert_eq!(wire, serde_json::to_value(event).unwrap());
        assert_eq!(
            serde_json::from_slice::<mnemo_domain::RecordedEvent>(&encoded.envelope).unwrap(),
            *event
        );
        assert_eq!(encoded.global_position, event.global_position);
        assert_eq!(encoded.event_id, event.event_id);
        assert_eq!(encoded.tenant, event.tenant);
        assert_eq!(encoded.stream_id, event.stream_id);
        assert_eq!(encoded.subject, event.subject);
        assert_eq!(encoded.event_type, event.event_type);
        assert_eq!(encoded.traceparent, event.metadata.traceparent);
    }
    assert!(encoded[0].traceparent.is_some());
    assert_eq!(encoded[1].subject, None);
    // Paged as `read_all` pages.
    let first = store.read_all_encoded(start, 1).await.unwrap();
    assert_eq!(first, encoded[..1]);
}

pub async fn tenants_are_isolated<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let s = subject("shared-subject");
    let e = event("MessageReceived", Some(&s), "alice");
    let id = e.event_id;
    store
        .append(
            &a,
            "conversation-shared-subject",
            ExpectedVersion::Any,
            vec![e],
        )
        .await
        .unwrap();
    assert!(store
        .read_stream(&b, "conversation-shared-subject")
        .await
        .unwrap()
        .is_empty());
    assert!(store.read_subject(&b, &s).await.unwrap().is_empty());
    assert!(store.get_event(&b, &id).await.unwrap().is_none());
    let query = EventQuery {
        limit: 100,
        ..Default::default()
    };
    assert!(store.query(&b, &query).await.unwrap().is_empty());
    // B's stream of the same name is its own, starting at version 1.
    let result = store
        .append(
            &b,
            "conversation-shared-subject",
            ExpectedVersion::NoStream,
            vec![event("MessageReceived", Some(&s), "bob")],
        )
        .await
        .unwrap();
    assert_eq!(result.stream_version, 1);
    assert_eq!(store.read_subject(&a, &s).await.unwrap().len(), 1);
    assert!(store.get_event(&a, &id).await.unwrap().is_some());

    // Each tenant's storage counts its own events only.
    let (a_bytes, b_bytes) = (
        store.stored_bytes(&a).await.unwrap(),
        store.stored_bytes(&b).await.unwrap(),
    );
    assert!(a_bytes > 0 && b_bytes > 0, "{a_bytes} {b_bytes}");
    assert_eq!(store.stored_bytes(&tenant("tenant-c")).await.unwrap(), 0);
    store
        .append(
            &a,
            "conversation-shared-subject",
            ExpectedVersion::Any,
            vec![event("MessageReceived", Some(&s), "alice")],
        )
        .await
        .unwrap();
    assert!(store.stored_bytes(&a).await.unwrap() > a_bytes);
    assert_eq!(store.stored_bytes(&b).await.unwrap(), b_bytes);
}

pub async fn counts_a_tenants_events_of_a_type_since_a_time<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let s = SubjectId::parse("u1").unwrap();
    let append = |tenant: TenantId, event_type: &'static str, count: usize| {
        let store = store.clone();
        let s = s.clone();
        async move {
            let events = (0..count)
                .map(|_| event(event_type, Some(&s), "x"))
                .collect();
            store
                .append(&tenant, "conversation-u1", ExpectedVersion::Any, events)
                .await
                .unwrap();
        }
    };
    append(a.clone(), "MessageReceived", 3).await;
    // Recorded times are the store's clock, in microseconds.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let since = Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_eq!(
        store
            .count_since(&a, "MessageReceived", since)
            .await
            .unwrap(),
        0
    );
    append(a.clone(), "MessageReceived", 4).await;
    append(a.clone(), "ProfileUpdated", 2).await;
    append(b.clone(), "MessageReceived", 5).await;
    append(a.clone(), "MessageReceived", 1).await;
    assert_eq!(
        store
            .count_since(&a, "MessageReceived", since)
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        store
            .count_since(&a, "ProfileUpdated", since)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .count_since(&b, "MessageReceived", since)
            .await
            .unwrap(),
        5
    );
    let earlier = since - Duration::hours(1);
    assert_eq!(
        store
            .count_since(&a, "MessageReceived", earlier)
            .await
            .unwrap(),
        8
    );
    let later = Utc::now() + Duration::seconds(1);
    assert_eq!(
        store
            .count_since(&a, "MessageReceived", later)
            .await
            .unwrap(),
        0
    );
}

pub async fn survives_a_restart<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let t = tenant("t1");
    let e = event("MessageReceived", None, "a");
    let id = e.event_id;
    {
        let store = open().await;
        store
            .append(&t, "memory-r", ExpectedVersion::NoStream, vec![e])
            .await
            .unwrap();
    }
    let store = open().await;
    let stream = store.read_stream(&t, "memory-r").await.unwrap();
    assert_eq!(stream.len(), 1);
    assert_eq!(stream[0].event_id, id);
    wait_for_head(store.as_ref(), stream[0].global_position).await;
    let next = store
        .append(
            &t,
            "memory-r",
            ExpectedVersion::Exact(1),
            vec![event("MemoryRevised", None, "a")],
        )
        .await
        .unwrap();
    assert_eq!(next.stream_version, 2);
    assert!(next.events[0].global_position > stream[0].global_position);
}

pub async fn refuses_unsealed_subject_text<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    let mut e = event("MessageReceived", None, "a");
    e.payload = json!({"content": {"$text": "my secret"}});
    let result = store
        .append(&t, "conversation-u", ExpectedVersion::Any, vec![e])
        .await;
    assert!(matches!(
        result,
        Err(EventStoreError::UnsealedPayload { .. })
    ));
    // Tags, sessions and message ids are subject data too: refused in
    // plain form, and as a clear `$value` marker.
    for payload in [
        json!({"message_id": "jane.doe@example.com"}),
        json!({"session": "s-1"}),
        json!({"message_id": {"$value": "jane.doe@example.com"}}),
    ] {
        let mut e = event("MessageReceived", None, "b");
        e.payload = payload;
        let result = store
            .append(&t, "conversation-u", ExpectedVersion::Any, vec![e])
            .await;
        assert!(matches!(
            result,
            Err(EventStoreError::UnsealedPayload { .. })
        ));
    }
    let mut e = event("MemoryCreated", None, "c");
    e.payload = json!({"tags": ["penicillin"]});
    assert!(matches!(
        store
            .append(&t, "memory-m", ExpectedVersion::Any, vec![e])
            .await,
        Err(EventStoreError::UnsealedPayload { .. })
    ));
    assert!(store
        .read_stream(&t, "conversation-u")
        .await
        .unwrap()
        .is_empty());
}

pub async fn queries_filter_and_page<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    let s1 = subject("s1");
    let s2 = subject("s2");
    store
        .append(
            &t,
            "a",
            ExpectedVersion::Any,
            vec![
                event("MessageReceived", Some(&s1), "alice"),
                event("MemoryCreated", Some(&s1), "bob"),
                event("MessageReceived", Some(&s2), "alice"),
            ],
        )
        .await
        .unwrap();
    let base = EventQuery {
        limit: 100,
        ..Default::default()
    };
    let by_subject = store
        .query(
            &t,
            &EventQuery {
                subject: Some(s1.clone()),
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(by_subject.len(), 2);
    let by_actor = store
        .query(
            &t,
            &EventQuery {
                actor: Some("alice".into()),
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(by_actor.len(), 2);
    let by_type = store
        .query(
            &t,
            &EventQuery {
                event_types: vec!["MemoryCreated".into()],
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(by_type.len(), 1);
    assert_eq!(by_type[0].metadata.actor, "bob");
    let future = store
        .query(
            &t,
            &EventQuery {
                from: Some(Utc::now() + Duration::hours(1)),
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert!(future.is_empty());
    let past = store
        .query(
            &t,
            &EventQuery {
                to: Some(Utc::now() + Duration::hours(1)),
                from: Some(Utc::now() - Duration::hours(1)),
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(past.len(), 3);
    let page1 = store
        .query(
            &t,
            &EventQuery {
                limit: 2,
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(page1.len(), 2);
    let page2 = store
        .query(
            &t,
            &EventQuery {
                after_position: Some(page1[1].global_position),
                ..base
            },
        )
        .await
        .unwrap();
    assert_eq!(page2.len(), 1);
    assert_eq!(page2[0].subject.as_ref(), Some(&s2));
}

pub async fn concurrent_appends_to_one_stream_without_expectation_all_land<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    // Conversation streams are appended with `Any` by concurrent requests:
    // none of them may fail for racing another.
    let store = open().await;
    let t = tenant("t1");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            store
                .append(
                    &t,
                    "conversation-busy",
                    ExpectedVersion::Any,
                    vec![
                        event("MessageReceived", None, "a"),
                        event("MessageReceived", None, "a"),
                    ],
                )
                .await
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let stream = store.read_stream(&t, "conversation-busy").await.unwrap();
    assert_eq!(
        stream.iter().map(|e| e.stream_version).collect::<Vec<_>>(),
        (1..=16).collect::<Vec<u64>>()
    );
}

pub async fn read_all_skips_nothing_while_writers_race<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    // A relay reads while several writers append batches of events: every
    // event must be read exactly once, positions always increasing.
    let store = open().await;
    let start = store.head_position().await.unwrap();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..15 {
                    let batch: Vec<_> = (0..3)
                        .map(|_| event("MessageReceived", None, "a"))
                        .collect();
                    ids.extend(batch.iter().map(|e| e.event_id));
                    store
                        .append(
                            &tenant(&format!("t{}", w % 2)),
                            &format!("writer-{w}-{}", i % 2),
                            ExpectedVersion::Any,
                            batch,
                        )
                        .await
                        .unwrap();
                }
                ids
            })
        })
        .collect();
    let reader = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut after = start;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while seen.len() < 4 * 15 * 3 && std::time::Instant::now() < deadline {
                let page = store.read_all(after, 7).await.unwrap();
                if page.is_empty() {
                    store
                        .wait_for_append(after, std::time::Duration::from_millis(50))
                        .await;
                }
                for e in page {
                    assert!(e.global_position > after, "positions increase");
                    after = e.global_position;
                    seen.push(e.event_id);
                }
            }
            seen
        })
    };
    let mut written = std::collections::HashSet::new();
    for writer in writers {
        written.extend(writer.await.unwrap());
    }
    let seen = reader.await.unwrap();
    let unique: std::collections::HashSet<_> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "an event was read twice");
    assert_eq!(unique, written, "an event was skipped");
}

pub async fn concurrent_retries_of_one_append_write_it_once<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    // A client that times out and retries while the first request is still
    // in flight: one of them writes, every other reports duplicates.
    let store = open().await;
    let t = tenant("t1");
    let batch = vec![
        event("MessageReceived", None, "a"),
        event("MessageReceived", None, "a"),
    ];
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (store, t, batch) = (store.clone(), t.clone(), batch.clone());
            tokio::spawn(async move {
                store
                    .append(&t, "conversation-retried", ExpectedVersion::Any, batch)
                    .await
            })
        })
        .collect();
    let mut written = 0;
    for task in tasks {
        let result = task.await.unwrap().unwrap();
        assert_eq!(result.stream_version, 2);
        written += result.events.iter().filter(|e| !e.duplicate).count();
    }
    assert_eq!(written, 2);
    let stream = store.read_stream(&t, "conversation-retried").await.unwrap();
    assert_eq!(
        stream.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        batch.iter().map(|e| e.event_id).collect::<Vec<_>>()
    );
}

pub async fn gets_events_by_id_in_the_order_asked<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    // What a search does with the episodes it found: one call for all of
    // them, each as `get_event` would return it, in rank order.
    let store = open().await;
    let (a, b) = (tenant("t-many-a"), tenant("t-many-b"));
    let s = subject("s-many");
    let first = event("MessageReceived", Some(&s), "a");
    let second = event("MessageReceived", Some(&s), "a");
    let elsewhere = event("MemoryCreated", Some(&s), "a");
    let (id1, id2, id3) = (first.event_id, second.event_id, elsewhere.event_id);
    store
        .append(
            &a,
            "conversation-s-many",
            ExpectedVersion::Any,
            vec![first, second],
        )
        .await
        .unwrap();
    store
        .append(&a, "memory-many", ExpectedVersion::Any, vec![elsewhere])
        .await
        .unwrap();
    let foreign = event("MessageReceived", Some(&s), "b");
    let foreign_id = foreign.event_id;
    store
        .append(
            &b,
            "conversation-s-many",
            ExpectedVersion::Any,
            vec![foreign],
        )
        .await
        .unwrap();

    // Absent, foreign and repeated ids are left out; the rest keep the
    // order asked and are exactly what `get_event` returns.
    let asked = [id3, EventId::new(), id1, foreign_id, id3, id2];
    let got = store.get_events(&a, &asked).await.unwrap();
    assert_eq!(
        got.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        [id3, id1, id2]
    );
    for event in &got {
        let one = store.get_event(&a, &event.event_id).await.unwrap();
        assert_eq!(one.as_ref(), Some(event));
    }
    assert!(store.get_events(&a, &[]).await.unwrap().is_empty());
    assert!(store.get_events(&b, &[id1, id2]).await.unwrap().is_empty());

    // More ids than one statement of a chunking adapter holds.
    let batch: Vec<NewEvent> = (0..1_200)
        .map(|_| event("MessageReceived", Some(&s), "a"))
        .collect();
    let mut ids: Vec<EventId> = batch.iter().map(|e| e.event_id).collect();
    store
        .append(&a, "conversation-s-long", ExpectedVersion::Any, batch)
        .await
        .unwrap();
    ids.reverse();
    let got = store.get_events(&a, &ids).await.unwrap();
    assert_eq!(got.iter().map(|e| e.event_id).collect::<Vec<_>>(), ids);
    assert_eq!(got[0].stream_version, 1_200);
}

pub async fn reads_several_streams_in_the_order_asked<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    // What a projection does with the memory streams a run names: one
    // call, each stream as `read_stream` returns it.
    let store = open().await;
    let (a, b) = (tenant("t-streams-a"), tenant("t-streams-b"));
    let s = subject("s-streams");
    for (stream, count) in [("memory-1", 3), ("memory-2", 1), ("memory-3", 2)] {
        // Appended one at a time, so the streams' events interleave in the log.
        for _ in 0..count {
            store
                .append(
                    &a,
                    stream,
                    ExpectedVersion::Any,
                    vec![event("MemoryCreated", Some(&s), "a")],
                )
                .await
                .unwrap();
        }
    }
    store
        .append(
            &b,
            "memory-2",
            ExpectedVersion::Any,
            vec![event("MemoryCreated", Some(&s), "b")],
        )
        .await
        .unwrap();

    let asked: Vec<String> = [
        "memory-3",
        "memory-absent",
        "memory-1",
        "memory-3",
        "memory-2",
    ]
    .map(String::from)
    .to_vec();
    let got = store.read_streams(&a, &asked).await.unwrap();
    let mut expected = Vec::new();
    for stream in ["memory-3", "memory-1", "memory-2"] {
        expected.extend(store.read_stream(&a, stream).await.unwrap());
    }
    assert_eq!(got, expected);
    assert_eq!(
        stream_versions(&got),
        [
            ("memory-3", 1),
            ("memory-3", 2),
            ("memory-1", 1),
            ("memory-1", 2),
            ("memory-1", 3),
            ("memory-2", 1),
        ]
    );
    // Another tenant's stream of the same name is not read.
    assert!(got.iter().all(|e| e.tenant == a));
    assert!(store.read_streams(&a, &[]).await.unwrap().is_empty());

    // More streams than one statement of a chunking adapter holds.
    let many: Vec<String> = (0..1_200).map(|i| format!("memory-many-{i}")).collect();
    store
        .append_streams(
            &a,
            many.iter()
                .map(|stream| {
                    stream_append(
                        stream,
                        ExpectedVersion::Any,
                        vec![event("MemoryCreated", Some(&s), "a")],
                    )
                })
                .collect(),
        )
        .await
        .unwrap();
    let reversed: Vec<String> = many.iter().rev().cloned().collect();
    let got = store.read_streams(&a, &reversed).await.unwrap();
    assert_eq!(
        got.iter().map(|e| e.stream_id.clone()).collect::<Vec<_>>(),
        reversed
    );

    // Only past a version per stream (0: the whole stream), in the order
    // asked, the tenant's only.
    let after: Vec<(String, u64)> = [
        ("memory-1", 1),
        ("memory-absent", 0),
        ("memory-3", 2),
        ("memory-2", 0),
    ]
    .map(|(s, v)| (s.to_owned(), v))
    .to_vec();
    let got = store.read_streams_after(&a, &after).await.unwrap();
    assert_eq!(
        stream_versions(&got),
        [("memory-1", 2), ("memory-1", 3), ("memory-2", 1)]
    );
    assert!(got.iter().all(|e| e.tenant == a));
    assert_eq!(got[0], store.read_stream(&a, "memory-1").await.unwrap()[1]);
    let many_after: Vec<(String, u64)> = reversed.iter().map(|s| (s.clone(), 0)).collect();
    let got = store.read_streams_after(&a, &many_after).await.unwrap();
    assert_eq!(
        got.iter().map(|e| e.stream_id.clone()).collect::<Vec<_>>(),
        reversed
    );
    assert!(store.read_streams_after(&a, &[]).await.unwrap().is_empty());
    // A stream asked twice is read once, from the lower version.
    let twice: Vec<(String, u64)> = [("memory-1", 2), ("memory-2", 0), ("memory-1", 1)]
        .map(|(s, v)| (s.to_owned(), v))
        .to_vec();
    let got = store.read_streams_after(&a, &twice).await.unwrap();
    assert_eq!(
        stream_versions(&got),
        [("memory-1", 2), ("memory-1", 3), ("memory-2", 1)]
    );
}

/// Each event's stream and version, in the order read.
fn stream_versions(events: &[mnemo_domain::RecordedEvent]) -> Vec<(&str, u64)> {
    events
        .iter()
        .map(|e| (e.stream_id.as_str(), e.stream_version))
        .collect()
}

fn stream_append(
    stream_id: &str,
    expected: ExpectedVersion,
    events: Vec<NewEvent>,
) -> StreamAppend {
    StreamAppend {
        stream_id: stream_id.to_owned(),
        expected,
        events,
    }
}

pub async fn appends_to_several_streams_all_or_nothing<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    // What a consolidated batch writes: memories on their own streams and
    // the batch's record, in one transaction.
    let store = open().await;
    let t = tenant("t-streams");
    let s = subject("s-streams");
    let head = store.head_position().await.unwrap();
    let (a1, a2, b1, c1) = (
        event("MemoryCreated", Some(&s), "c"),
        event("MemoryReinforced", Some(&s), "c"),
        event("MemoryCreated", Some(&s), "c"),
        event("BatchConsolidated", Some(&s), "c"),
    );
    let results = store
        .append_streams(
            &t,
            vec![
                stream_append("memory-a", ExpectedVersion::NoStream, vec![a1.clone()]),
                stream_append("memory-b", ExpectedVersion::Any, vec![b1.clone()]),
                // The same stream again sees the append before it.
                stream_append("memory-a", ExpectedVersion::Exact(1), vec![a2.clone()]),
                stream_append("consolidation-s", ExpectedVersion::Any, vec![c1.clone()]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        results.iter().map(|r| r.stream_version).collect::<Vec<_>>(),
        [1, 1, 2, 1]
    );
    let positions: Vec<i64> = results
        .iter()
        .flat_map(|r| &r.events)
        .map(|e| e.global_position)
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    let a: Vec<EventId> = store
        .read_stream(&t, "memory-a")
        .await
        .unwrap()
        .iter()
        .map(|e| e.event_id)
        .collect();
    assert_eq!(a, [a1.event_id, a2.event_id]);
    wait_for_head(store.as_ref(), *positions.last().unwrap()).await;
    let all: Vec<EventId> = store
        .read_all(head, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.event_id)
        .collect();
    assert_eq!(all, [a1.event_id, b1.event_id, a2.event_id, c1.event_id]);

    // A retry of the whole is reported as duplicates and writes nothing.
    let retry = store
        .append_streams(
            &t,
            vec![
                stream_append("memory-a", ExpectedVersion::Any, vec![a1.clone(), a2]),
                stream_append("memory-b", ExpectedVersion::Any, vec![b1]),
            ],
        )
        .await
        .unwrap();
    assert!(retry.iter().flat_map(|r| &r.events).all(|e| e.duplicate));

    // One stream's refusal refuses the whole: nothing of the other lands.
    let fresh = event("MemoryCreated", Some(&s), "c");
    let refused = store
        .append_streams(
            &t,
            vec![
                stream_append("memory-c", ExpectedVersion::Any, vec![fresh.clone()]),
                stream_append(
                    "memory-a",
                    ExpectedVersion::NoStream,
                    vec![event("MemoryArchived", Some(&s), "c")],
                ),
            ],
        )
        .await;
    assert!(
        matches!(refused, Err(EventStoreError::Conflict { .. })),
        "{refused:?}"
    );
    assert!(store.read_stream(&t, "memory-c").await.unwrap().is_empty());
    assert!(store
        .get_event(&t, &fresh.event_id)
        .await
        .unwrap()
        .is_none());
    assert_eq!(store.read_stream(&t, "memory-a").await.unwrap().len(), 2);

    // The rules of a single append hold for each part.
    let unsealed = NewEvent {
        payload: json!({"content": {"$text": "in clear"}}),
        ..event("MemoryCreated", Some(&s), "c")
    };
    let refused = store
        .append_streams(
            &t,
            vec![
                stream_append("memory-d", ExpectedVersion::Any, vec![fresh.clone()]),
                stream_append("memory-e", ExpectedVersion::Any, vec![unsealed]),
            ],
        )
        .await;
    assert!(
        matches!(refused, Err(EventStoreError::UnsealedPayload { .. })),
        "{refused:?}"
    );
    assert!(store
        .get_event(&t, &fresh.event_id)
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        store.append_streams(&t, Vec::new()).await,
        Err(EventStoreError::EmptyAppend)
    ));
    assert!(matches!(
        store
            .append_streams(
                &t,
                vec![stream_append("memory-f", ExpectedVersion::Any, Vec::new())]
            )
            .await,
        Err(EventStoreError::EmptyAppend)
    ));
}

/// Appends of many events (more than one statement's worth of rows or ids
/// where an adapter batches its statements) keep the events' order, and a
/// retry with new events among them writes only the new ones; within one
/// call, an event appended by an earlier stream append counts as written.
pub async fn large_appends_keep_order_and_write_only_the_new<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let store = open().await;
    let t = tenant("t1");
    let events: Vec<NewEvent> = (0..1_100)
        .map(|_| event("MessageReceived", None, "a"))
        .collect();
    let first = store
        .append(
            &t,
            "conversation-big",
            ExpectedVersion::NoStream,
            events.clone(),
        )
        .await
        .unwrap();
    assert_eq!(first.stream_version, 1_100);
    for (i, (appended, asked)) in first.events.iter().zip(&events).enumerate() {
        assert_eq!(appended.event_id, asked.event_id);
        assert_eq!(appended.stream_version, i as u64 + 1);
        assert!(!appended.duplicate);
    }
    assert!(first
        .events
        .windows(2)
        .all(|w| w[0].global_position < w[1].global_position));
    let stream = store.read_stream(&t, "conversation-big").await.unwrap();
    let read: Vec<EventId> = stream.iter().map(|e| e.event_id).collect();
    let asked: Vec<EventId> = events.iter().map(|e| e.event_id).collect();
    assert_eq!(read, asked);

    // The same events with five new ones among them.
    let mut retry = events.clone();
    let new: Vec<NewEvent> = (0..5)
        .map(|_| event("MessageReceived", None, "a"))
        .collect();
    for (k, event) in new.iter().enumerate() {
        retry.insert(k * 250, event.clone());
    }
    let again = store
        .append(&t, "conversation-big", ExpectedVersion::Any, retry.clone())
        .await
        .unwrap();
    assert_eq!(again.stream_version, 1_105);
    let mut next_version = 1_101;
    for (appended, asked) in again.events.iter().zip(&retry) {
        assert_eq!(appended.event_id, asked.event_id);
        match first.events.iter().find(|e| e.event_id == asked.event_id) {
            Some(original) => {
                assert!(appended.duplicate);
                assert_eq!(appended.global_position, original.global_position);
                assert_eq!(appended.stream_version, original.stream_version);
            }
            None => {
                assert!(!appended.duplicate);
                assert_eq!(appended.stream_version, next_version);
                next_version += 1;
            }
        }
    }
    assert_eq!(
        store
            .read_stream(&t, "conversation-big")
            .await
            .unwrap()
            .len(),
        1_105
    );

    // One call of 300 streams (a consolidation group's new memories),
    // more rows than one statement holds where an adapter batches them
    // across streams; one stream comes again past that boundary.
    let mut group: Vec<StreamAppend> = (0..300)
        .map(|n| StreamAppend {
            stream_id: format!("memory-g{n}"),
            expected: ExpectedVersion::NoStream,
            events: vec![event("MemoryCreated", None, "a")],
        })
        .collect();
    group.insert(
        250,
        StreamAppend {
            stream_id: "memory-g3".into(),
            expected: ExpectedVersion::Exact(1),
            events: vec![event("MemoryReinforced", None, "a")],
        },
    );
    let results = store.append_streams(&t, group.clone()).await.unwrap();
    assert_eq!(results.len(), 301);
    let positions: Vec<i64> = results
        .iter()
        .flat_map(|r| &r.events)
        .map(|e| e.global_position)
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "call order");
    assert_eq!(results[250].stream_version, 2);
    assert!(results
        .iter()
        .enumerate()
        .all(|(i, r)| i == 250 || r.stream_version == 1));
    let g3: Vec<EventId> = store
        .read_stream(&t, "memory-g3")
        .await
        .unwrap()
        .iter()
        .map(|e| e.event_id)
        .collect();
    assert_eq!(
        g3,
        [group[3].events[0].event_id, group[250].events[0].event_id]
    );
    let last = store.read_stream(&t, "memory-g299").await.unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].global_position, *positions.last().unwrap());
    let again = store.append_streams(&t, group).await.unwrap();
    assert!(again.iter().flat_map(|r| &r.events).all(|e| e.duplicate));

    // One call, two appends to one stream, the second repeating the first.
    let repeated = event("MemoryCreated", None, "a");
    let later = event("MemoryReinforced", None, "a");
    let results = store
        .append_streams(
            &t,
            vec![
                StreamAppend {
                    stream_id: "memory-m".into(),
                    expected: ExpectedVersion::Any,
                    events: vec![repeated.clone()],
                },
                StreamAppend {
                    stream_id: "memory-m".into(),
                    expected: ExpectedVersion::Any,
                    events: vec![repeated.clone(), later.clone()],
                },
            ],
        )
        .await
        .unwrap();
    assert!(results[1].events[0].duplicate);
    assert_eq!(
        results[1].events[0].global_position,
        results[0].events[0].global_position
    );
    assert_eq!(results[1].events[1].stream_version, 2);
    // ...and repeating it in another stream of the same call writes nothing.
    let taken = store
        .append_streams(
            &t,
            vec![
                StreamAppend {
                    stream_id: "memory-n".into(),
                    expected: ExpectedVersion::Any,
                    events: vec![event("MemoryCreated", None, "a")],
                },
                StreamAppend {
                    stream_id: "memory-o".into(),
                    expected: ExpectedVersion::Any,
                    events: vec![later],
                },
            ],
        )
        .await;
    assert!(matches!(taken, Err(EventStoreError::EventIdTaken(_))));
    assert!(store.read_stream(&t, "memory-n").await.unwrap().is_empty());
}

/// Expands to one `#[tokio::test]` per contract case. `$open` is an async
/// closure-like expression `|| async { ... }` returning `Arc<dyn EventStore>`
/// over storage that is fresh per test but the same across calls in a test;
/// `$setup` runs once per test and is in scope for `$open` as `state`.
#[macro_export]
macro_rules! event_store_contract_tests {
    (setup: $setup:expr, open: $open:expr) => {
        $crate::event_store_contract_tests!(@cases $setup, $open;
            appends_and_reads_a_stream_in_order,
            refuses_a_stale_expected_version,
            concurrent_writers_with_the_same_expectation_one_wins,
            append_is_idempotent_on_event_id,
            read_all_is_in_commit_order_without_gaps,
            read_all_encoded_is_what_read_all_serializes,
            tenants_are_isolated,
            counts_a_tenants_events_of_a_type_since_a_time,
            survives_a_restart,
            refuses_unsealed_subject_text,
            queries_filter_and_page,
            concurrent_appends_to_one_stream_without_expectation_all_land,
            read_all_skips_nothing_while_writers_race,
            concurrent_retries_of_one_append_write_it_once,
            gets_events_by_id_in_the_order_asked,
            reads_several_streams_in_the_order_asked,
            appends_to_several_streams_all_or_nothing,
            large_appends_keep_order_and_write_only_the_new,
        );
    };
    (@cases $setup:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let state = std::sync::Arc::new($setup.await);
                let open = $open;
                $crate::testsuite::$case(|| open(state.clone())).await;
            }
        )*
    };
}
