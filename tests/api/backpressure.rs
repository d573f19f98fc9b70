//! Backpressure: per-tenant quotas answer 429, the backlog ceiling 503
//! and a disk below its floor of free space 507, each with `Retry-After`,
//! a JSON error naming the limit, and nothing appended; the backlog shows in `/readyz` (`degraded` with its reasons,
//! still 200) and `/metrics`, and both return to normal once it drains.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use mnemo_llm::testsupport::MockLlmServer;

use crate::helpers::{spawn_app_in, spawn_app_with, TestApp};

async fn app_with(config: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mnemo.toml");
    std::fs::write(&file, config).unwrap();
    let app = spawn_app_with(&[("MNEMO_CONFIG", file.to_str().unwrap())]).await;
    drop(dir);
    app
}

fn messages(from: usize, count: usize) -> Value {
    (from..from + count)
        .map(|i| json!({"role": "user", "content": format!("I keep bees on the roof, hive {i}")}))
        .collect()
}

/// Asserts a refusal with `Retry-After`, the code and the limit named.
async fn assert_refused(response: reqwest::Response, status: u16, code: &str, limit: &str) -> u64 {
    assert_eq!(response.status().as_u16(), status);
    let retry_after: u64 = response
        .headers()
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["limit"], limit, "{body}");
    assert_eq!(body["error"]["retry_after_seconds"], retry_after, "{body}");
    assert!(
        body["error"]["limit_value"]
            .as_u64()
            .is_some_and(|value| value >= 1),
        "{body}"
    );
    retry_after
}

async fn message_events(app: &TestApp, tenant: &str) -> usize {
    app.all_events(tenant)
        .await
        .iter()
        .filter(|e| e["type"] == "MessageReceived")
        .count()
}

#[tokio::test]
async fn a_tenant_past_its_quota_gets_429_and_others_are_unaffected() {
    let app = app_with(
        "[quotas.default]\nmessages_per_day = 1000\n\
         [quotas.tenants.small]\nmessages_per_day = 5\n\
         [quotas.tenants.chatty]\nrequests_per_second = 1\n",
    )
    .await;
    let small = app.admin("small");
    let posted = app.post_messages(&small, "s1", messages(0, 3)).await;
    assert_eq!(posted.status(), 202);
    // Three more would pass five: refused whole, nothing appended.
    let refused = app.post_messages(&small, "s1", messages(3, 3)).await;
    let retry_after = assert_refused(refused, 429, "quota_exceeded", "messages_per_day").await;
    assert!(retry_after <= 86_400);
    assert_eq!(message_events(&app, "small").await, 3);
    // What still fits is accepted.
    let posted = app.post_messages(&small, "s1", messages(3, 2)).await;
    assert_eq!(posted.status(), 202);
    assert_eq!(message_events(&app, "small").await, 5);

    // Another tenant, under the default quota, is not held back.
    let other = app.admin("other");
    let posted = app.post_messages(&other, "s1", messages(0, 20)).await;
    assert_eq!(posted.status(), 202);

    // One request per second: the second in a row is refused, writing a
    // memory included, and accepted again a second later.
    let chatty = app.admin("chatty");
    let posted = app.post_messages(&chatty, "s1", messages(0, 1)).await;
    assert_eq!(posted.status(), 202);
    let refused = app
        .create_memory(
            &chatty,
            "s1",
            json!({"content": "Prefers tea", "kind": "preference"}),
        )
        .await;
    assert_refused(refused, 429, "quota_exceeded", "requests_per_second").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let created = app
        .create_memory(
            &chatty,
            "s1",
            json!({"content": "Prefers tea", "kind": "preference"}),
        )
        .await;
    assert_eq!(created.status(), 201);

    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("mnemo_ingest_refused_total{limit=\"messages_per_day\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("mnemo_ingest_refused_total{limit=\"requests_per_second\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

/// The day's messages are counted from the log, not only in the process:
/// a restart (a deploy, a crash) does not start the tenant's day afresh.
#[tokio::test]
async fn the_days_message_quota_counts_what_was_accepted_before_a_restart() {
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("mnemo.toml");
    std::fs::write(&file, "[quotas.tenants.small]\nmessages_per_day = 5\n").unwrap();
    let env = [("MNEMO_CONFIG", file.to_str().unwrap())];
    let app = spawn_app_with(&env).await;
    let small = app.admin("small");
    let posted = app.post_messages(&small, "s1", messages(0, 4)).await;
    assert_eq!(posted.status(), 202);
    let app = spawn_app_in(app.stop().await, &env).await;
    let small = app.admin("small");
    let refused = app.post_messages(&small, "s1", messages(4, 2)).await;
    assert_refused(refused, 429, "quota_exceeded", "messages_per_day").await;
    assert_eq!(message_events(&app, "small").await, 4);
    let posted = app.post_messages(&small, "s1", messages(4, 1)).await;
    assert_eq!(posted.status(), 202);
    assert_eq!(message_events(&app, "small").await, 5);
    app.stop().await;
}

async fn event_count(app: &TestApp, tenant: &str, event_type: &str) -> usize {
    app.all_events(tenant)
        .await
        .iter()
        .filter(|e| e["type"] == event_type)
        .count()
}

#[tokio::test]
async fn memories_per_subject_and_storage_quotas_refuse_before_the_append() {
    let app = app_with(
        "[quotas.tenants.capped]\nmemories_per_subject = 2\n\
         [quotas.tenants.tiny]\nstorage_bytes = 3000\n",
    )
    .await;

    // Two active memories per subject: the third is refused, with nothing
    // appended; another subject, and another tenant, are not held back.
    let capped = app.admin("capped");
    let mut ids = Vec::new();
    for content in ["Keeps bees", "Lives in Lyon"] {
        let created = app
            .create_memory(&capped, "s1", json!({"content": content, "kind": "fact"}))
            .await;
        assert_eq!(created.status(), 201);
        let body: Value = created.json().await.unwrap();
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    app.wait_for_list(&capped, "s1", |m| m.len() == 2).await;
    let refused = app
        .create_memory(
            &capped,
            "s1",
            json!({"content": "Plays the cello", "kind": "fact"}),
        )
        .await;
    let retry_after = assert_refused(refused, 429, "quota_exceeded", "memories_per_subject").await;
    assert_eq!(retry_after, 60);
    assert_eq!(event_count(&app, "capped", "MemoryCreated").await, 2);
    let elsewhere = app
        .create_memory(
            &capped,
            "s2",
            json!({"content": "Plays the cello", "kind": "fact"}),
        )
        .await;
    assert_eq!(elsewhere.status(), 201);
    let other = app.admin("other");
    for i in 0..3 {
        let created = app
            .create_memory(
                &other,
                "s1",
                json!({"content": format!("Fact {i}"), "kind": "fact"}),
            )
            .await;
        assert_eq!(created.status(), 201);
    }
    // Deleting one makes room again (once the list shows it).
    let deleted = app
        .call(
            Method::DELETE,
            &format!("/v1/memories/{}", ids[0]),
            &capped,
            None,
        )
        .await;
    assert!(deleted.status().is_success(), "{}", deleted.status());
    app.wait_for_list(&capped, "s1", |m| {
        m.iter().filter(|m| m["state"] == "active").count() == 1
    })
    .await;
    let created = app
        .create_memory(
            &capped,
            "s1",
            json!({"content": "Plays the cello", "kind": "fact"}),
        )
        .await;
    assert_eq!(created.status(), 201);

    // 3,000 bytes of log: three posts of 1,000 characters reach it, the
    // fourth (and a memory write) is refused, nothing appended.
    let tiny = app.admin("tiny");
    let long = |i: usize| json!([{"role": "user", "content": format!("{i}{}", "b".repeat(999))}]);
    for i in 0..3 {
        let posted = app.post_messages(&tiny, "s1", long(i)).await;
        assert_eq!(posted.status(), 202, "post {i}");
    }
    let refused = app.post_messages(&tiny, "s1", long(3)).await;
    assert_refused(refused, 429, "quota_exceeded", "storage_bytes").await;
    let refused = app
        .create_memory(
            &tiny,
            "s1",
            json!({"content": "Keeps bees", "kind": "fact"}),
        )
        .await;
    assert_refused(refused, 429, "quota_exceeded", "storage_bytes").await;
    assert_eq!(message_events(&app, "tiny").await, 3);
    assert_eq!(event_count(&app, "tiny", "MemoryCreated").await, 0);
    // The log's own figure (read again after 10 s) is past the limit too.
    tokio::time::sleep(Duration::from_millis(10_100)).await;
    let refused = app.post_messages(&tiny, "s1", long(4)).await;
    assert_refused(refused, 429, "quota_exceeded", "storage_bytes").await;
    // Erasure is never held back by a quota.
    let erased = app
        .call(Method::DELETE, "/v1/subjects/s1", &tiny, None)
        .await;
    assert!(erased.status().is_success(), "{}", erased.status());

    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("mnemo_ingest_refused_total{limit=\"memories_per_subject\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("mnemo_ingest_refused_total{limit=\"storage_bytes\"} 3"),
        "{metrics}"
    );
    app.stop().await;
}

/// Polls `/readyz` until `predicate` holds.
async fn wait_for_ready(app: &TestApp, what: &str, predicate: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let body = app.public_json("/readyz").await;
        if predicate(&body) {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}; last /readyz: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn gauge(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

#[tokio::test]
async fn the_backlog_degrades_readiness_and_past_its_ceiling_ingest_answers_503() {
    // Only an explicit request consolidates, so the buffer holds what is
    // posted until the test asks.
    let app = app_with(
        "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n\
         [backlog]\ndegraded_records = 3\nceiling_messages = 5\n",
    )
    .await;
    let token = app.admin("t1");
    let ready = app.public_json("/readyz").await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["backlog"]["consolidation"]["messages"], 0, "{ready}");
    assert!(ready["disk_free_bytes"].as_u64().is_some(), "{ready}");

    let posted = app.post_messages(&token, "s1", messages(0, 6)).await;
    assert_eq!(posted.status(), 202);
    let degraded = wait_for_ready(&app, "six messages buffered", |body| {
        body["backlog"]["consolidation"]["messages"] == 6
    })
    .await;
    // Degraded, still serving, and it says why.
    assert_eq!(degraded["status"], "degraded", "{degraded}");
    assert_eq!(degraded["backlog"]["consolidation"]["conversations"], 1);
    assert_eq!(degraded["backlog"]["unconsolidated"], 6);
    let reasons = degraded["degraded"].as_array().unwrap();
    assert!(
        reasons.iter().any(|r| r == "unconsolidated messages 6 > 3"),
        "{degraded}"
    );
    assert!(degraded["backlog"]["consolidation"]["oldest_seconds"].is_number());
    // `mnemo status` prints the same for an operator, and exits 1.
    let status = std::process::Command::new(mnemo_tests::binary("mnemo"))
        .args(["status", "--url", &app.address])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{printed}");
    assert!(printed.contains("status          degraded"), "{printed}");
    assert!(
        printed.contains("unconsolidated messages 6 > 3"),
        "{printed}"
    );
    assert!(
        printed.contains("6 messages in 1 conversations"),
        "{printed}"
    );
    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert_eq!(gauge(&metrics, "mnemo_consolidation_buffer_messages"), 6.0);
    assert_eq!(
        gauge(&metrics, "mnemo_consolidation_buffer_conversations"),
        1.0
    );
    assert_eq!(gauge(&metrics, "mnemo_degraded"), 1.0);

    // Past the ceiling: refused before the append, for every tenant.
    let refused = app.post_messages(&token, "s2", messages(10, 1)).await;
    assert_refused(refused, 503, "backlog_full", "backlog_ceiling").await;
    let other = app.admin("t2");
    let refused = app.post_messages(&other, "s1", messages(0, 1)).await;
    assert_refused(refused, 503, "backlog_full", "backlog_ceiling").await;
    assert_eq!(message_events(&app, "t1").await, 6);
    assert_eq!(message_events(&app, "t2").await, 0);
    // Writes that add nothing to the backlog still pass.
    let created = app
        .create_memory(
            &token,
            "s1",
            json!({"content": "Keeps bees", "kind": "fact"}),
        )
        .await;
    assert_eq!(created.status(), 201);

    // Consolidated, the backlog drains and everything returns to normal.
    let asked = app
        .call(
            Method::POST,
            "/v1/subjects/s1/consolidate",
            &token,
            Some(json!({})),
        )
        .await;
    assert_eq!(asked.status(), 202);
    let ready = wait_for_ready(&app, "the buffer drained", |body| {
        body["backlog"]["consolidation"]["messages"] == 0 && body["status"] == "ready"
    })
    .await;
    assert_eq!(ready["degraded"], json!([]), "{ready}");
    let status = std::process::Command::new(mnemo_tests::binary("mnemo"))
        .args(["status", "--url", &app.address])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0));
    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert_eq!(gauge(&metrics, "mnemo_consolidation_buffer_messages"), 0.0);
    assert_eq!(gauge(&metrics, "mnemo_degraded"), 0.0);
    let posted = app.post_messages(&other, "s1", messages(0, 1)).await;
    assert_eq!(posted.status(), 202);
    app.stop().await;
}

/// The value of a counter or gauge with labels, e.g. `name{limit="slowdown"}`.
/// A disk with less free space than the floor (here a floor no disk
/// reaches) makes the process `degraded` and has ingest refuse new content
/// with 507 before the append, for every tenant; an erasure still runs.
#[tokio::test]
async fn a_disk_below_its_floor_degrades_readiness_and_ingest_answers_507() {
    let app = app_with("[backlog]\nmin_free_disk_bytes = 9000000000000000000\n").await;
    let token = app.admin("t1");
    let ready = app.public_json("/readyz").await;
    assert_eq!(ready["status"], "degraded", "{ready}");
    let free = ready["disk_free_bytes"].as_u64().expect("the disk is read");
    assert_eq!(
        ready["degraded"],
        json!([format!(
            "free disk {free} bytes < 9000000000000000000 bytes"
        )]),
        "{ready}"
    );

    let refused = app.post_messages(&token, "s1", messages(0, 2)).await;
    let retry_after =
        assert_refused(refused, 507, "insufficient_storage", "min_free_disk_bytes").await;
    assert_eq!(retry_after, 60);
    let other = app.admin("t2");
    let refused = app
        .create_memory(
            &other,
            "s1",
            json!({"content": "Keeps bees", "kind": "fact"}),
        )
        .await;
    assert_refused(refused, 507, "insufficient_storage", "min_free_disk_bytes").await;
    assert_eq!(message_events(&app, "t1").await, 0);
    assert_eq!(event_count(&app, "t2", "MemoryCreated").await, 0);
    // An erasure is never refused: it is how room is made, and a right.
    let receipt = app.erase(&token, "s1").await;
    assert_eq!(receipt["status"], "completed", "{receipt}");

    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert!(gauge(&metrics, "mnemo_disk_free_bytes") > 0.0);
    assert_eq!(gauge(&metrics, "mnemo_degraded"), 1.0);
    assert_eq!(
        labelled(
            &metrics,
            "mnemo_ingest_refused_total{limit=\"min_free_disk_bytes\"}"
        ),
        2.0
    );
    let status = std::process::Command::new(mnemo_tests::binary("mnemo"))
        .args(["status", "--url", &app.address])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{printed}");
    assert!(printed.contains("  degraded:     free disk "), "{printed}");
    assert!(printed.contains("disk free       "), "{printed}");
}

fn labelled(metrics: &str, name_and_labels: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix(name_and_labels)?
                .strip_prefix(' ')?
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

#[tokio::test]
async fn a_trailing_consolidator_paces_ingest_and_refuses_a_wait_too_long() {
    // One worker, held 6 s by the model's first answer: the consumer waits
    // for it with every full batch behind, so the consolidator's oldest
    // unread message ages past the 1 s threshold while the test posts.
    let llm = MockLlmServer::start().await;
    llm.push_delay(r#"{"memories": []}"#, Duration::from_secs(6));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mnemo.toml");
    std::fs::write(
        &file,
        "[consolidation.default]\nbatch_size = 2\nidle_timeout = 3600\nend_earlier_sessions = false\n\
         [backlog]\nslowdown_seconds = 1\n",
    )
    .unwrap();
    let uri = llm.uri();
    let app = spawn_app_with(&[
        ("MNEMO_CONFIG", file.to_str().unwrap()),
        ("MNEMO_CONSOLIDATION_WORKERS", "1"),
        ("MNEMO_LLM_BASE_URL", uri.as_str()),
        ("MNEMO_LLM_MODEL", "mock-model"),
        ("MNEMO_LLM_API_KEY", "sk-test"),
    ])
    .await;
    let token = app.admin("t1");
    let mut accepted = 0;
    let held = app.post_messages(&token, "held", messages(0, 2)).await;
    assert_eq!(held.status(), 202);
    accepted += 2;

    // Two messages each 100 ms, each a full batch of a new subject, until
    // ingest says it is paced.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let rate = loop {
        let response = app
            .post_messages(&token, &format!("s{accepted}"), messages(0, 2))
            .await;
        assert_eq!(response.status(), 202);
        accepted += 2;
        if let Some(rate) = app.public_json("/readyz").await["ingest_pace"].as_f64() {
            break rate;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "ingest was never paced; /readyz: {}",
            app.public_json("/readyz").await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Paced below what the test posted (about 20 messages a second).
    assert!((1.0..20.0).contains(&rate), "{rate}");

    // Requests of 100 messages, 50 ms apart: each moves the clock on by
    // 100 ÷ rate, so soon one would wait more than 10 s and is refused
    // before its append; those before it are held, not refused.
    let mut requests = Vec::new();
    for n in 0..10 {
        requests.push(tokio::spawn({
            let (address, token) = (app.address.clone(), token.clone());
            async move {
                let started = tokio::time::Instant::now();
                let response = reqwest::Client::new()
                    .post(format!("{address}/v1/subjects/big{n}/messages"))
                    .bearer_auth(token)
                    .json(&json!({ "messages": messages(0, 100) }))
                    .send()
                    .await
                    .unwrap();
                (response, started.elapsed())
            }
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Meanwhile another tenant posts: it is not behind t1's requests, whose
    // clock runs more than 10 s ahead now, but admitted at once on a share
    // of the rate of its own.
    let other = app.admin("t2");
    let started = tokio::time::Instant::now();
    let response = app.post_messages(&other, "quiet", messages(0, 2)).await;
    assert_eq!(response.status(), 202);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "t2 waited {:?} behind t1",
        started.elapsed()
    );
    let (mut refusals, mut longest_held) = (0, Duration::ZERO);
    for request in requests {
        let (response, took) = request.await.unwrap();
        if response.status() == 202 {
            accepted += 100;
            longest_held = longest_held.max(took);
        } else {
            let retry_after = assert_refused(response, 503, "slow_down", "slowdown").await;
            assert!(retry_after > 10, "{retry_after}");
            refusals += 1;
        }
    }
    assert!(refusals >= 1, "no request was refused");
    assert!(
        longest_held > Duration::from_secs(2),
        "held requests waited {longest_held:?}"
    );
    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert!(gauge(&metrics, "mnemo_ingest_paced_requests_total") >= 1.0);
    assert_eq!(
        labelled(&metrics, "mnemo_ingest_refused_total{limit=\"slowdown\"}"),
        refusals as f64
    );
    // What was refused was not appended; what was held was.
    assert_eq!(message_events(&app, "t1").await, accepted);

    // Once the model answers, the consolidator catches up and the next
    // posts end the pacing.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let response = app
            .post_messages(&token, &format!("after{accepted}"), messages(0, 2))
            .await;
        assert_eq!(response.status(), 202);
        accepted += 2;
        let ready = app.public_json("/readyz").await;
        if ready["ingest_pace"].is_null() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pacing never ended; /readyz: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert_eq!(
        gauge(&metrics, "mnemo_ingest_pace_messages_per_second"),
        0.0
    );
    app.stop().await;
}

// ------------------------------------------------------- parallel consolidation

/// Facts far apart (for the lexical embedder too), so which memory
/// reinforces which cannot depend on when the projection indexed it.
const LINES: [&str; 20] = [
    "I live in Lyon near the old market",
    "I work as a night nurse at the clinic",
    "I am allergic to peanuts",
    "My sister Ana studies marine biology",
    "I play the cello every Sunday",
    "My daughter turned seven in March",
    "I drive an electric scooter to work",
    "I am learning Japanese calligraphy",
    "My favourite film is Spirited Away",
    "I grow tomatoes on my balcony",
    "I run a half marathon each autumn",
    "My landlord raised the rent again",
    "I keep two cats named Pixel and Byte",
    "I volunteer at the food bank on Fridays",
    "My father repairs antique clocks",
    "I prefer green tea to coffee",
    "I am saving for a trip to Patagonia",
    "My team ships the mobile app monthly",
    "I sing in a choir with my neighbours",
    "I collect vintage postcards of Porto",
];

/// 3 subjects × 2 sessions, 5 messages each (3 + 2 with a batch size of 3).
const SUBJECTS: usize = 3;
const SESSIONS: usize = 2;
const PER_CONVERSATION: usize = 5;

async fn consolidating_app(workers: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mnemo.toml");
    std::fs::write(
        &file,
        "[consolidation.default]\nbatch_size = 3\nidle_timeout = 3600\nend_earlier_sessions = false\n",
    )
    .unwrap();
    let app = spawn_app_with(&[
        ("MNEMO_CONFIG", file.to_str().unwrap()),
        ("MNEMO_CONSOLIDATION_WORKERS", workers),
    ])
    .await;
    drop(dir);
    app
}

/// Posts the conversations' messages one request each in `order` (a
/// conversation's own messages keep their order), asks for the rest to be
/// consolidated, waits until nothing is left, and returns per subject its
/// memories' contents and its batches' sizes, both sorted.
async fn consolidate(app: &TestApp, case: usize, order: &[usize]) -> Vec<(Vec<String>, Vec<u64>)> {
    let token = app.admin("par");
    let mut next = [0usize; SUBJECTS * SESSIONS];
    for &conversation in order {
        let (subject, session) = (conversation / SESSIONS, conversation % SESSIONS);
        let line = LINES
            [(subject * SESSIONS + session) * PER_CONVERSATION % LINES.len() + next[conversation]];
        next[conversation] += 1;
        let posted = app
            .post_messages(
                &token,
                &format!("c{case}-s{subject}"),
                json!([{"role": "user", "content": line, "session": format!("k{session}")}]),
            )
            .await;
        assert_eq!(posted.status(), 202);
    }
    for subject in 0..SUBJECTS {
        let asked = app
            .call(
                Method::POST,
                &format!("/v1/subjects/c{case}-s{subject}/consolidate"),
                &token,
                Some(json!({})),
            )
            .await;
        assert_eq!(asked.status(), 202);
    }
    // Every batch recorded (each batch's record is appended last)...
    for subject in 0..SUBJECTS {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while batch_sizes(app, &token, &format!("c{case}-s{subject}"))
            .await
            .len()
            < 4
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "batches never recorded"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // ...and projected: two readings of /readyz (each at most a second
    // old), the second taken after the first saw the relay done.
    for _ in 0..2 {
        wait_for_ready(app, "consolidated and projected", |body| {
            body["backlog"]["unconsolidated"] == 0
                && body["consumer_lag"]["retriever.memory-projection"] == 0
                && body["relay_lag"] == 0
        })
        .await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let mut outcome = Vec::new();
    for subject in 0..SUBJECTS {
        let subject = format!("c{case}-s{subject}");
        let body = app
            .get_json(
                &format!("/v1/subjects/{subject}/memories?limit=100"),
                &token,
            )
            .await;
        let mut contents: Vec<String> = body["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect();
        contents.sort();
        let mut batches = batch_sizes(app, &token, &subject).await;
        batches.sort();
        outcome.push((contents, batches));
    }
    outcome
}

/// The message counts of the subject's recorded batches, in log order.
async fn batch_sizes(app: &TestApp, token: &str, subject: &str) -> Vec<u64> {
    let audit = app
        .get_json(
            &format!("/v1/audit?subject={subject}&type=BatchConsolidated&limit=100"),
            token,
        )
        .await;
    audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["payload"]["messages"].as_u64().unwrap())
        .collect()
}

/// Whatever order the conversations' messages arrive in, consolidating on
/// several workers gives each conversation the batches a batch size of 3
/// gives (3 then 2: never a batch split between two workers, never one
/// consolidated twice) and the memories one worker gives.
#[test]
fn parallel_consolidation_batches_and_remembers_as_one_worker_does() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (parallel, sequential) =
        runtime.block_on(async { (consolidating_app("4").await, consolidating_app("1").await) });
    let arrivals: Vec<usize> = (0..SUBJECTS * SESSIONS)
        .flat_map(|c| std::iter::repeat_n(c, PER_CONVERSATION))
        .collect();
    let case = std::sync::atomic::AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 6,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&Just(arrivals).prop_shuffle(), |order| {
            let case = case.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            runtime.block_on(async {
                let got = consolidate(&parallel, case, &order).await;
                let expected = consolidate(&sequential, case, &order).await;
                for (subject, (contents, batches)) in got.iter().enumerate() {
                    assert_eq!(batches, &[2, 2, 3, 3], "subject {subject}, order {order:?}");
                    assert!(
                        !contents.is_empty(),
                        "subject {subject}: nothing remembered"
                    );
                }
                assert_eq!(got, expected, "order {order:?}");
            });
            Ok(())
        })
        .unwrap();
    runtime.block_on(async {
        parallel.stop().await;
        sequential.stop().await;
    });
}
