//! `mnemo bench asof`: what the as-of reads and the changes read cost for
//! a subject with many memory events, over real HTTP against a server on a
//! temporary data dir. The events (creates, then revisions, then archives,
//! one append each, so their times spread) are appended through the
//! server's sealed log, as the consolidator and the forgetter append
//! theirs. The server runs the retriever role alone: with no relay nothing
//! reaches the projections, so they do not compete for the CPU with the
//! reads measured, which read the log only. Prints medians; asserts
//! nothing.

use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, SecondsFormat, Utc};
use mnemo_auth::{MintRequest, Minter, Scope};
use mnemo_domain::events::{streams, MemoryCreated, MemoryRevised, MemoryStateChanged};
use mnemo_domain::{
    DomainEvent, EventId, EventMetadata, MemoryId, MemoryKind, MemoryState, Producer, Provenance,
    SubjectId, SubjectText, TenantId,
};
use mnemo_event_store::sealed::Pending;
use mnemo_event_store::ExpectedVersion;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct AsOfBenchArgs {
    /// Memory events of the subject (about 4 per memory).
    pub events: usize,
    /// Timed requests per read.
    pub queries: usize,
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub async fn asof(args: AsOfBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.events >= 4 && args.queries > 0,
        "counts must be positive"
    );
    let dir = tempfile::tempdir()?;
    let settings = crate::bench_search::settings_for(dir.path(), "lexical", None)?;
    let secret_file = settings.dev_secret_file();
    let app = mnemo_app::Application::build_roles(settings, mnemo_app::Roles::RETRIEVER).await?;
    let url = format!("http://127.0.0.1:{}", app.port());
    let log = app.log();
    tokio::spawn(app.run());
    let (secret, _) = mnemo_app::secrets::load_or_create_dev_secret(&secret_file)?;
    let tenant = TenantId::parse("bench")?;
    let subject = SubjectId::parse("bench-subject")?;
    let token = Minter::hs256(&secret, "mnemo", "mnemo").mint(&MintRequest {
        tenant: tenant.clone(),
        actor: "bench".into(),
        scopes: vec![Scope::MemoriesRead],
        subject: None,
        ttl: Duration::from_secs(3600),
    })?;

    // A quarter of the events create memories; the rest revise each twice
    // and archive it, in rounds, so every instant of the range has a mix.
    let memories = args.events / 4;
    let ids: Vec<MemoryId> = (0..memories).map(|_| MemoryId::new()).collect();
    let metadata = EventMetadata {
        actor: "bench".into(),
        ..Default::default()
    };
    let started = Instant::now();
    let first = Utc::now();
    for round in 0..4 {
        for (n, id) in ids.iter().enumerate() {
            let event = match round {
                0 => DomainEvent::MemoryCreated(MemoryCreated {
                    memory_id: *id,
                    kind: MemoryKind::Fact,
                    content: SubjectText::new(format!("The subject said thing number {n}")),
                    tags: vec!["bench".into()],
                    confidence: 0.9,
                    importance: 0.7,
                    state: MemoryState::Active,
                    provenance: Provenance {
                        source_event_ids: Vec::new(),
                        producer: Producer::api(),
                    },
                    session: None,
                    agent: None,
                    pii: Default::default(),
                }),
                1 | 2 => DomainEvent::MemoryRevised(MemoryRevised {
                    content: Some(SubjectText::new(format!("Revision {round} of thing {n}"))),
                    reason: Some(SubjectText::new("corrected")),
                    ..Default::default()
                }),
                _ => DomainEvent::MemoryArchived(MemoryStateChanged {
                    reason: Some(SubjectText::new("idle")),
                }),
            };
            log.append_one(
                &tenant,
                &streams::memory(id),
                ExpectedVersion::Exact(round),
                Pending {
                    event_id: EventId::new(),
                    subject: Some(subject.clone()),
                    event,
                    metadata: metadata.clone(),
                },
            )
            .await?;
        }
    }
    let last = Utc::now();
    let middle = first + (last - first) / 2;
    println!(
        "as-of benchmark: {} memory events ({} memories) of one subject appended in {:.1} s",
        memories * 4,
        memories,
        started.elapsed().as_secs_f64()
    );

    let client = reqwest::Client::new();
    let get = |path: String| {
        let client = client.clone();
        let url = url.clone();
        let token = token.clone();
        async move {
            let response = client
                .get(format!("{url}{path}"))
                .bearer_auth(token)
                .send()
                .await?;
            anyhow::ensure!(
                response.status() == 200,
                "GET {path}: {}",
                response.status()
            );
            let body: Value = response.json().await?;
            anyhow::Ok(body)
        }
    };
    let base = format!("/v1/subjects/{}", subject.as_str());
    let one = ids[memories / 2];
    let reads = [
        (
            "subject memories as of the middle (first page of 50)",
            format!("{base}/memories?as_of={}", stamp(middle)),
        ),
        (
            "subject memories as of the middle (page of 500)",
            format!("{base}/memories?as_of={}&limit=500", stamp(middle)),
        ),
        (
            "changes over the whole range (first page of 500)",
            format!("{base}/changes?from={}&limit=500", stamp(first)),
        ),
        (
            "one memory as of the middle",
            format!("/v1/memories/{one}?as_of={}", stamp(middle)),
        ),
    ];
    println!("| read | median | requests |");
    println!("|---|---:|---:|");
    for (what, path) in reads {
        let mut times = Vec::with_capacity(args.queries);
        for _ in 0..args.queries {
            let sent = Instant::now();
            get(path.clone()).await.context(what)?;
            times.push(sent.elapsed());
        }
        println!(
            "| {what} | {:.1} ms | {} |",
            median(times).as_secs_f64() * 1000.0,
            args.queries
        );
    }
    // The whole diff, every page: what a console showing all of it waits.
    let mut times = Vec::new();
    let mut changes = 0;
    for _ in 0..args.queries.min(5) {
        let sent = Instant::now();
        let mut cursor = String::new();
        changes = 0;
        loop {
            let page = get(format!(
                "{base}/changes?from={}&limit=500{cursor}",
                stamp(first)
            ))
            .await?;
            changes += page["items"].as_array().map_or(0, Vec::len);
            match page["next_cursor"].as_str() {
                Some(next) => cursor = format!("&cursor={next}"),
                None => break,
            }
        }
        times.push(sent.elapsed());
    }
    println!(
        "| changes over the whole range, every page ({changes} changes) | {:.1} ms | {} |",
        median(times).as_secs_f64() * 1000.0,
        args.queries.min(5)
    );
    drop(dir);
    Ok(())
}
