//! Episodic memory on the conversation path, with the real model: posted
//! messages become searchable episodes with the provenance of exactly the
//! turns they return, `include` and `window` are honoured, the context
//! block has a section for them and never pays twice for one thing said,
//! erasure takes them from the index, a reindex brings them back, and the
//! tenant's episode policy forgets them.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, settings_for, spawn_app_in, spawn_app_with_model, TestApp};

/// Only explicit requests consolidate, so each test decides when.
const MANUAL: &str =
    "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n";

/// Posts user turns of one session (ids `<session>-<n>`, a minute apart
/// from 2023-05-08 13:56); returns their event ids in order.
async fn post_turns(
    app: &TestApp,
    token: &str,
    subject: &str,
    session: &str,
    lines: &[&str],
) -> Vec<String> {
    post_turns_on(app, token, subject, session, "2023-05-08", lines).await
}

/// [`post_turns`] said on `day` (`YYYY-MM-DD`).
async fn post_turns_on(
    app: &TestApp,
    token: &str,
    subject: &str,
    session: &str,
    day: &str,
    lines: &[&str],
) -> Vec<String> {
    let messages: Vec<Value> = lines
        .iter()
        .enumerate()
        .map(|(i, text)| {
            json!({
                "id": format!("{session}-{i}"),
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": text,
                "session": session,
                "timestamp": format!("{day}T13:{:02}:00Z", 56 + i.min(3)),
            })
        })
        .collect();
    let body = app
        .post_json(
            &format!("/v1/subjects/{subject}/messages"),
            token,
            json!({ "messages": messages }),
        )
        .await;
    body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn search(app: &TestApp, token: &str, subject: &str, body: Value) -> Vec<Value> {
    let found = app
        .post_json(&format!("/v1/subjects/{subject}/search"), token, body)
        .await;
    found["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {found}"))
        .clone()
}

fn sources(result: &Value) -> Vec<String> {
    result["provenance"]["source_event_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect()
}

/// Waits until searching episodes for `query` returns the message
/// `event_id` (messages are indexed in order, so the last one posted being
/// found means all are).
async fn wait_for_episode(app: &TestApp, token: &str, subject: &str, query: &str, event_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let results = search(
            app,
            token,
            subject,
            json!({"query": query, "include": ["episodes"], "k": 10}),
        )
        .await;
        if results.iter().any(|r| sources(r) == [event_id]) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "episode {event_id} never became searchable: {results:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

const TRIP: [&str; 4] = [
    "We finally booked the trip to Lisbon for October.",
    "How are you getting there?",
    "By night train through Madrid, my brother insisted.",
    "That sounds lovely.",
];

#[tokio::test]
async fn posted_messages_are_searchable_episodes_with_their_provenance() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    let ids = post_turns(&app, &token, "ivy", "s1", &TRIP).await;
    wait_for_episode(&app, &token, "ivy", TRIP[3], &ids[3]).await;

    // Nothing was consolidated: what was said is found as it was said.
    let results = search(
        &app,
        &token,
        "ivy",
        json!({"query": "how is she travelling to Lisbon?", "k": 3}),
    )
    .await;
    let top = &results[0];
    assert_eq!(top["type"], "episode", "{results:?}");
    assert!(top.get("memory").is_none());
    let episode = &top["episode"];
    // The trip, the question about getting there or its answer (each
    // indexed with the turn before it).
    assert!(
        TRIP[..3].contains(&episode["content"].as_str().unwrap()),
        "{top}"
    );
    assert_eq!(episode["session"], "s1");
    assert_eq!(sources(top), [episode["id"].as_str().unwrap()]);
    assert!(ids.contains(&episode["id"].as_str().unwrap().to_owned()));
    assert!(episode["message_id"].as_str().unwrap().starts_with("s1-"));
    assert!(episode["timestamp"]
        .as_str()
        .unwrap()
        .starts_with("2023-05-08T13:"));
    assert!(top["components"]["fused"].is_number());

    // The answer is found with the question before it (indexed together).
    let found = search(
        &app,
        &token,
        "ivy",
        json!({"query": "night train through Madrid", "include": ["episodes"], "k": 2, "window": 1}),
    )
    .await;
    // The turn after it is indexed with it too, so either may rank first.
    let train: Vec<Value> = found
        .into_iter()
        .filter(|r| r["episode"]["content"] == TRIP[2])
        .collect();
    assert_eq!(train.len(), 1, "the answer is among the first two");
    // A window returns the neighbours of the same session, and provenance
    // names exactly the turns returned.
    let turns: Vec<&str> = train[0]["episode"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["content"].as_str().unwrap())
        .collect();
    assert_eq!(turns, &TRIP[1..4]);
    assert_eq!(sources(&train[0]), &ids[1..4]);

    // `include` is honoured both ways.
    let memories_only = search(
        &app,
        &token,
        "ivy",
        json!({"query": "Lisbon", "include": ["memories"]}),
    )
    .await;
    assert!(memories_only.is_empty(), "{memories_only:?}");
    // A kind filter is a memory filter.
    let with_kind = search(
        &app,
        &token,
        "ivy",
        json!({"query": "Lisbon", "filters": {"kinds": ["fact"]}}),
    )
    .await;
    assert!(with_kind.is_empty(), "{with_kind:?}");
    // A session filter applies to episodes (by keyed token).
    let other_session = search(
        &app,
        &token,
        "ivy",
        json!({"query": "Lisbon", "filters": {"session": "s2"}}),
    )
    .await;
    assert!(other_session.is_empty(), "{other_session:?}");
    let same_session = search(
        &app,
        &token,
        "ivy",
        json!({"query": "Lisbon", "filters": {"session": "s1"}}),
    )
    .await;
    assert!(!same_session.is_empty());
    // Another subject sees none of them.
    let other = search(&app, &token, "zed", json!({"query": "Lisbon"})).await;
    assert!(other.is_empty(), "{other:?}");

    // Recursive retrieval: the second pass, fed the first pass's best
    // texts, still finds the answer.
    let with_feedback = search(
        &app,
        &token,
        "ivy",
        json!({"query": "how is she travelling to Lisbon?", "k": 4, "feedback": true}),
    )
    .await;
    assert!(
        with_feedback
            .iter()
            .any(|r| r["episode"]["content"] == TRIP[2]),
        "{with_feedback:?}"
    );

    for (body, code) in [
        (json!({"query": "x", "window": 3}), "invalid_window"),
        (json!({"query": "x", "include": []}), "invalid_include"),
    ] {
        let response = app
            .call(Method::POST, "/v1/subjects/ivy/search", &token, Some(body))
            .await;
        assert_error(response, 422, code).await;
    }
    let response = app
        .call(
            Method::POST,
            "/v1/subjects/ivy/search",
            &token,
            Some(json!({"query": "x", "include": ["dreams"]})),
        )
        .await;
    assert_eq!(response.status(), 400);
}

#[tokio::test]
async fn context_has_a_section_for_past_conversations_and_pays_once() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    let ids = post_turns(
        &app,
        &token,
        "jo",
        "s1",
        &[
            "I love green tea, I drink it every morning.",
            "Noted!",
            "Yesterday I bought a new teapot at the market in Lyon.",
        ],
    )
    .await;
    app.call(Method::POST, "/v1/subjects/jo/consolidate", &token, None)
        .await;
    // The rules keep the preference, with the first message as its source.
    let memories = app.wait_for_list(&token, "jo", |m| !m.is_empty()).await;
    let tea = memories
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("green tea"))
        .unwrap_or_else(|| panic!("{memories:?}"));
    assert_eq!(tea["provenance"]["source_event_ids"], json!([ids[0]]));
    wait_for_episode(&app, &token, "jo", "teapot market", &ids[2]).await;

    let context = app
        .post_json(
            "/v1/subjects/jo/context",
            &token,
            json!({"messages": [{"role": "user", "content": "What tea does she like, and where did she buy the teapot?"}],
                   "token_budget": 300, "max_memories": 5, "window": 0}),
        )
        .await;
    let block = context["block"].as_str().unwrap();
    assert!(
        block.contains("Relevant memories about the user"),
        "{block}"
    );
    assert!(block.contains("green tea"), "{block}");
    assert!(block.contains("From past conversations"), "{block}");
    assert!(
        block.contains("- [2023-05-08] user: Yesterday I bought a new teapot"),
        "{block}"
    );
    // The memory and the message it came from: the budget is spent once.
    assert_eq!(block.matches("green tea").count(), 1, "{block}");
    let episodes = context["episodes"].as_array().unwrap();
    assert!(episodes.iter().all(|e| e["type"] == "episode"));
    assert!(
        episodes.iter().all(|e| sources(e) != [ids[0].clone()]),
        "the tea message is not an episode of the block: {episodes:?}"
    );
    assert!(context["memories"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["type"] == "memory"));
    assert!(context["tokens"].as_u64().unwrap() <= 300);

    // Search does not spend two places on it either: the memory is found,
    // the message it came from is not returned beside it.
    let found = search(
        &app,
        &token,
        "jo",
        json!({"query": "What tea does she drink every morning?", "k": 5}),
    )
    .await;
    assert!(
        found
            .iter()
            .any(|r| r["type"] == "memory" && r["memory"]["id"] == tea["id"]),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .all(|r| r["type"] == "memory" || sources(r) != [ids[0].clone()]),
        "the tea message is returned beside its memory: {found:?}"
    );
    // Episodes only: the message is returned, there is no memory to keep.
    let episodes_only = search(
        &app,
        &token,
        "jo",
        json!({"query": "What tea does she drink every morning?", "k": 5, "include": ["episodes"]}),
    )
    .await;
    assert!(
        episodes_only.iter().any(|r| sources(r) == [ids[0].clone()]),
        "{episodes_only:?}"
    );

    // By default (window 1) the block shows the turns around an episode,
    // every one its provenance names.
    let windowed = app
        .post_json(
            "/v1/subjects/jo/context",
            &token,
            json!({"messages": [{"role": "user", "content": "Where did she buy the teapot?"}],
                   "include": ["episodes"], "max_memories": 1}),
        )
        .await;
    let block = windowed["block"].as_str().unwrap();
    assert!(
        block.contains("- [2023-05-08] assistant: Noted!\n  user: Yesterday I bought a new teapot"),
        "{block}"
    );
    assert_eq!(sources(&windowed["episodes"][0]), &ids[1..3]);

    // Memories only: no section for episodes.
    let memories_only = app
        .post_json(
            "/v1/subjects/jo/context",
            &token,
            json!({"messages": [{"role": "user", "content": "Where did she buy the teapot?"}],
                   "include": ["memories"]}),
        )
        .await;
    assert!(!memories_only["block"]
        .as_str()
        .unwrap()
        .contains("From past conversations"));
    assert!(memories_only["episodes"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn erasure_takes_the_episodes_from_the_index() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    let ids = post_turns(&app, &token, "kim", "s1", &TRIP).await;
    post_turns(&app, &token, "lee", "s1", &TRIP[..1]).await;
    wait_for_episode(&app, &token, "kim", TRIP[3], &ids[3]).await;
    let tenant = mnemo_domain::TenantId::parse("acme").unwrap();
    let kim = mnemo_domain::SubjectId::parse("kim").unwrap();
    assert_eq!(app.index.count(&tenant, Some(&kim)).await.unwrap(), 4);

    let status = app.erase(&token, "kim").await;
    let vectors = status["receipt"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["store"] == "vector_index")
        .expect("vector step")
        .clone();
    assert_eq!(vectors["count"], 4, "{vectors}");
    assert_eq!(app.index.count(&tenant, Some(&kim)).await.unwrap(), 0);
    let results = search(&app, &token, "kim", json!({"query": "Lisbon"})).await;
    assert!(results.is_empty(), "{results:?}");
    let lee = search(&app, &token, "lee", json!({"query": "Lisbon"})).await;
    assert_eq!(lee.len(), 1, "other subjects keep theirs");
}

/// `/readyz` and `/metrics` say how far each consumer group is behind: a
/// projection's lag is what is posted but not searchable yet, and it
/// returns to zero once the episodes are indexed.
#[tokio::test]
async fn projection_lag_is_reported_and_drains() {
    let app = spawn_app_with_model(MANUAL).await;
    let token = app.admin("acme");
    let ids = post_turns(&app, &token, "ivy", "s1", &TRIP).await;
    wait_for_episode(&app, &token, "ivy", TRIP[3], &ids[3]).await;

    let deadline = Instant::now() + Duration::from_secs(30);
    let ready = loop {
        let ready = app.public_json("/readyz").await;
        // The projection commits a record after indexing it: searchable
        // comes a moment before committed.
        if ready["consumer_lag"]["retriever.episode-projection"] == 0 {
            break ready;
        }
        assert!(
            Instant::now() < deadline,
            "episode lag never drained: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let lag = ready["consumer_lag"].as_object().unwrap();
    let mut groups: Vec<&str> = lag.keys().map(String::as_str).collect();
    groups.sort_unstable();
    assert_eq!(
        groups,
        [
            "consolidator",
            "forgetter.access",
            "forgetter.erasure",
            "retriever.episode-projection",
            "retriever.memory-projection"
        ],
        "every group `serve` runs: {ready}"
    );
    assert!(lag.values().all(Value::is_u64), "{ready}");

    let metrics = app.public("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("mnemo_consumer_lag_events{group=\"retriever.episode-projection\"} 0"),
        "{metrics}"
    );
}

/// The tenant's episode policy forgets what was said past its time to
/// live and beyond its cap per subject: `mnemo forget --dry-run` lists
/// those episodes and changes nothing, the pass records
/// `EpisodesForgotten`, the projection takes their points out of search,
/// and a rebuilt index leaves them out. The messages stay in the log.
#[tokio::test]
async fn the_tenants_episode_policy_forgets_old_and_surplus_episodes() {
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("mnemo.toml");
    // A pass a day apart: the test runs each pass itself.
    std::fs::write(
        &config,
        "[consolidation.default]\nbatch_size = 50\nidle_timeout = 3600\nend_earlier_sessions = false\n\
         [forgetting]\ninterval_seconds = 86400\n\
         [forgetting.default.episodes]\nttl = 2592000\nmax_per_subject = 2\n",
    )
    .unwrap();
    let env = [("MNEMO_CONFIG", config.to_str().unwrap())];
    let app = spawn_app_in(tempfile::tempdir().unwrap(), &env).await;
    let token = app.admin("acme");
    let now = chrono::Utc::now();
    let at = |hours: i64| (now - chrono::Duration::hours(hours)).to_rfc3339();
    let said = [
        (
            "Our first flat was in Porto.",
            "2023-01-02T10:00:00Z".to_owned(),
        ),
        ("We moved to Lisbon last spring.", at(3)),
        ("The tram to Belem is always full.", at(2)),
        ("I bought a bike for the hills.", at(1)),
    ];
    let messages: Vec<Value> = said
        .iter()
        .enumerate()
        .map(|(i, (text, ts))| {
            json!({"id": format!("t{i}"), "role": "user", "content": text, "timestamp": ts})
        })
        .collect();
    let posted = app
        .post_json(
            "/v1/subjects/noa/messages",
            &token,
            json!({ "messages": messages }),
        )
        .await;
    let ids: Vec<String> = posted["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect();
    let tenant = mnemo_domain::TenantId::parse("acme").unwrap();
    let noa = mnemo_domain::SubjectId::parse("noa").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.index.count(&tenant, Some(&noa)).await.unwrap() < 4 {
        assert!(Instant::now() < deadline, "episodes never indexed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The stop commits what the projection indexed (see
    // `a_graceful_stop_commits_the_episodes_the_projection_indexed`): the
    // next start does not index these again, which a search after the
    // forgetting would otherwise see until their `EpisodesForgotten`
    // comes round.
    let dir = app.stop().await;
    let settings = settings_for(dir.path(), &env);

    // The dry run names the Porto turn (too old) and the oldest recent one
    // (over the cap of 2), and nothing else.
    let plan = mnemo_app::forget::report(&settings, true).await.unwrap();
    let listed: Vec<&str> = plan
        .lines()
        .filter(|l| l.starts_with("| acme | noa |"))
        .collect();
    assert_eq!(listed.len(), 2, "{plan}");
    assert!(
        listed[0].contains(&ids[0]) && listed[0].contains("| ttl |"),
        "{plan}"
    );
    assert!(
        listed[1].contains(&ids[1]) && listed[1].contains("| cap |"),
        "{plan}"
    );
    assert!(
        plan.contains("4 searchable episodes of 1 subjects: 2 would be forgotten"),
        "{plan}"
    );
    let again = mnemo_app::forget::report(&settings, true).await.unwrap();
    assert!(
        again.contains("2 would be forgotten"),
        "the dry run changed something: {again}"
    );

    let done = mnemo_app::forget::report(&settings, false).await.unwrap();
    assert!(
        done.contains("4 searchable episodes: 2 forgotten"),
        "{done}"
    );
    let repeated = mnemo_app::forget::report(&settings, false).await.unwrap();
    assert!(
        repeated.contains("2 searchable episodes: 0 forgotten"),
        "{repeated}"
    );

    // The running projection applies the events.
    let app = spawn_app_in(dir, &env).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.index.count(&tenant, Some(&noa)).await.unwrap() != 2 {
        assert!(
            Instant::now() < deadline,
            "forgotten episodes stayed indexed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let found = |results: Vec<Value>| {
        let mut found: Vec<String> = results.iter().flat_map(sources).collect();
        found.sort();
        found
    };
    let mut kept = vec![ids[2].clone(), ids[3].clone()];
    kept.sort();
    let query =
        json!({"query": "Porto Lisbon tram bike flat hills", "include": ["episodes"], "k": 10});
    assert_eq!(
        found(search(&app, &token, "noa", query.clone()).await),
        kept
    );
    let events = app.all_events("acme").await;
    let forgotten: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "EpisodesForgotten")
        .collect();
    assert_eq!(forgotten.len(), 2, "{events:?}");
    assert!(forgotten.iter().all(|e| e["actor"] == "mnemo-forgetter"));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "MessageReceived")
            .count(),
        4,
        "the messages stay in the log"
    );

    // A rebuilt index does not bring them back.
    let dir = app.stop().await;
    mnemo_app::reindex::run(&settings).await.unwrap();
    let app = spawn_app_in(dir, &env).await;
    assert_eq!(app.index.count(&tenant, Some(&noa)).await.unwrap(), 2);
    assert_eq!(found(search(&app, &token, "noa", query).await), kept);
}

/// A graceful stop (SIGTERM, or the server stopped) has the consumer
/// groups commit what they handled. Runs that arrive within the episode
/// projection's linger of its last flush are indexed at once but committed
/// only at its next flush; stopped before that and dropped, the projection
/// would be handed them again at the next start.
#[tokio::test]
async fn a_graceful_stop_commits_the_episodes_the_projection_indexed() {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), &[]).await;
    let token = app.admin("acme");
    let tenant = mnemo_domain::TenantId::parse("acme").unwrap();
    let noa = mnemo_domain::SubjectId::parse("noa").unwrap();
    let lines = [
        "We moved to Lisbon.",
        "The tram is full.",
        "I bought a bike.",
    ];
    // Back to back: each round's run lands within the linger of the last.
    for round in 1..=4 {
        post_turns(&app, &token, "noa", &format!("s{round}"), &lines).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while app.index.count(&tenant, Some(&noa)).await.unwrap() < 3 * round {
            assert!(Instant::now() < deadline, "episodes never indexed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let dir = app.stop().await;

    let settings = settings_for(dir.path(), &[]);
    let pool = mnemo_event_store::sqlite::connect(&settings.database_file())
        .await
        .unwrap();
    let bus = mnemo_bus::in_process::InProcessBus::new(pool.clone(), settings.bus_partitions);
    let group = mnemo_app::roles::Group::EPISODE_PROJECTION;
    let behind = mnemo_bus::Bus::lag(&bus, group.name, group.topics)
        .await
        .unwrap();
    assert_eq!(behind, 0, "indexed but not committed at the stop");
    pool.close().await;
}

/// Where a result with exactly these source messages ranks.
fn rank_of(results: &[Value], event_id: &str) -> usize {
    results
        .iter()
        .position(|r| sources(r) == [event_id])
        .unwrap_or_else(|| panic!("{event_id} not in {results:?}"))
}

#[tokio::test]
async fn a_question_that_asks_when_prefers_what_was_said_with_a_date() {
    // The dated turn says less about the lake than the undated one: by
    // relevance alone the undated one wins; asked *when*, the dated one
    // must (the default `dated_boost`), and without the boost it does not.
    let question = "When did she go hiking with her sister at the lake?";
    let mut ranks = Vec::new();
    for config in [
        MANUAL.to_owned(),
        format!("{MANUAL}[retrieval]\ndated_boost = 1.0\n"),
    ] {
        let app = spawn_app_with_model(&config).await;
        let token = app.admin("acme");
        let dated = post_turns(
            &app,
            &token,
            "ivy",
            "s1",
            &["I went hiking yesterday.", "Nice!"],
        )
        .await;
        let undated = post_turns(
            &app,
            &token,
            "ivy",
            "s2",
            &[
                "Hiking at the lake with my sister is my favourite thing.",
                "Sounds peaceful.",
            ],
        )
        .await;
        wait_for_episode(&app, &token, "ivy", "Sounds peaceful.", &undated[1]).await;
        let results = search(
            &app,
            &token,
            "ivy",
            json!({"query": question, "include": ["episodes"], "k": 4}),
        )
        .await;
        ranks.push((rank_of(&results, &dated[0]), rank_of(&results, &undated[0])));
        // The same words without "when": relevance alone, in both setups.
        let results = search(
            &app,
            &token,
            "ivy",
            json!({"query": "hiking with her sister at the lake", "include": ["episodes"], "k": 4}),
        )
        .await;
        assert!(rank_of(&results, &undated[0]) < rank_of(&results, &dated[0]));
        app.stop().await;
    }
    let [(dated_boosted, undated_boosted), (dated_plain, undated_plain)] = ranks[..] else {
        unreachable!()
    };
    assert!(dated_boosted < undated_boosted, "boosted: {ranks:?}");
    assert!(undated_plain < dated_plain, "without the boost: {ranks:?}");
}

#[tokio::test]
async fn a_question_naming_a_speaker_prefers_what_that_speaker_said() {
    // Mia's reply names Ana twice and says "research"; Ana's own turn is
    // what the question is about. Searched with the name, Mia's reply
    // wins; without it (the default `speaker_boost`), Ana's turn must.
    let question = "What did Ana research?";
    let mut ranks = Vec::new();
    for config in [
        MANUAL.to_owned(),
        format!("{MANUAL}[retrieval]\nspeaker_boost = 1.0\n"),
    ] {
        let app = spawn_app_with_model(&config).await;
        let token = app.admin("acme");
        let turns = post_turns(
            &app,
            &token,
            "ana",
            "s1",
            &[
                "Ana: I researched adoption agencies all week.",
                "Mia: That's great, Ana! Research takes time, Ana.",
            ],
        )
        .await;
        wait_for_episode(&app, &token, "ana", "Research takes time", &turns[1]).await;
        let results = search(
            &app,
            &token,
            "ana",
            json!({"query": question, "include": ["episodes"], "k": 4}),
        )
        .await;
        ranks.push((rank_of(&results, &turns[0]), rank_of(&results, &turns[1])));
        app.stop().await;
    }
    let [(ana_boosted, mia_boosted), (ana_plain, mia_plain)] = ranks[..] else {
        unreachable!()
    };
    assert!(ana_boosted < mia_boosted, "with the speaker: {ranks:?}");
    assert!(mia_plain < ana_plain, "without: {ranks:?}");
}

#[tokio::test]
async fn a_question_naming_a_date_prefers_what_was_said_that_day() {
    // The November turn says more about painting; the question names the
    // October day, so the October turn must win (the default
    // `on_date_boost`), and without the boost it does not.
    let question = "What did she paint on October 13, 2023?";
    let mut ranks = Vec::new();
    for config in [
        MANUAL.to_owned(),
        format!("{MANUAL}[retrieval]\non_date_boost = 1.0\n"),
    ] {
        let app = spawn_app_with_model(&config).await;
        let token = app.admin("acme");
        let october = post_turns_on(
            &app,
            &token,
            "eve",
            "s1",
            "2023-10-13",
            &["I painted a sunset.", "Lovely."],
        )
        .await;
        let november = post_turns_on(
            &app,
            &token,
            "eve",
            "s2",
            "2023-11-20",
            &[
                "I painted a sunset over the lake, my best painting yet.",
                "Wow.",
            ],
        )
        .await;
        wait_for_episode(&app, &token, "eve", "Wow.", &november[1]).await;
        wait_for_episode(&app, &token, "eve", "Lovely.", &october[1]).await;
        let results = search(
            &app,
            &token,
            "eve",
            json!({"query": question, "include": ["episodes"], "k": 4}),
        )
        .await;
        ranks.push((
            rank_of(&results, &october[0]),
            rank_of(&results, &november[0]),
        ));
        app.stop().await;
    }
    let [(october_boosted, november_boosted), (october_plain, november_plain)] = ranks[..] else {
        unreachable!()
    };
    assert!(october_boosted < november_boosted, "boosted: {ranks:?}");
    assert!(
        november_plain < october_plain,
        "without the boost: {ranks:?}"
    );
}

#[tokio::test]
async fn a_turn_that_asks_ranks_below_the_turn_that_answers() {
    // The question turn shares the query's words and form; the turn that
    // answers it shares one word. By relevance alone the question wins;
    // weighed by how much of it asks (the default `question_weight`), the
    // answer must, and with the weight at 0 it does not.
    let question = "What kind of yoga does she practice?";
    let mut ranks = Vec::new();
    for config in [
        MANUAL.to_owned(),
        format!("{MANUAL}[retrieval]\nquestion_weight = 0.0\n"),
    ] {
        let app = spawn_app_with_model(&config).await;
        let token = app.admin("acme");
        let asks = post_turns(
            &app,
            &token,
            "uma",
            "s1",
            &["What kind of yoga do you practice these days?"],
        )
        .await;
        let says = post_turns(
            &app,
            &token,
            "uma",
            "s2",
            &["I just started aerial yoga and it's great."],
        )
        .await;
        wait_for_episode(&app, &token, "uma", "aerial", &says[0]).await;
        wait_for_episode(&app, &token, "uma", "these days", &asks[0]).await;
        let results = search(
            &app,
            &token,
            "uma",
            json!({"query": question, "include": ["episodes"], "k": 4}),
        )
        .await;
        ranks.push((rank_of(&results, &says[0]), rank_of(&results, &asks[0])));
        app.stop().await;
    }
    let [(says_weighed, asks_weighed), (says_plain, asks_plain)] = ranks[..] else {
        unreachable!()
    };
    assert!(says_weighed < asks_weighed, "weighed: {ranks:?}");
    assert!(asks_plain < says_plain, "without the weight: {ranks:?}");
}
