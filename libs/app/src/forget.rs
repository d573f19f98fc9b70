//! `mnemo forget [--dry-run]`: one retention pass over the data dir, the
//! same pass the running server schedules, memories then episodes. With
//! `--dry-run` it prints every decision and its reason (each memory, and
//! each episode by its message's event id) and changes nothing.

use std::sync::Arc;

use chrono::Utc;
use mnemo_config::Settings;
use mnemo_domain::forgetting::{EpisodeRule, Verdict};
use mnemo_forgetter::retention::Retention;

use crate::stores::open_log;

pub async fn run(settings: &Settings, dry_run: bool) -> anyhow::Result<()> {
    print!("{}", report(settings, dry_run).await?);
    Ok(())
}

/// What [`run`] prints.
pub async fn report(settings: &Settings, dry_run: bool) -> anyhow::Result<String> {
    use std::fmt::Write;
    let mut out = String::new();
    if settings.database.is_none() {
        let database = settings.database_file();
        anyhow::ensure!(database.exists(), "no database at {}", database.display());
    }
    let (log, stores) = open_log(settings).await?;
    let retention = Retention {
        log,
        read_model: stores.read_model.clone(),
        usage: stores.usage.clone(),
        policies: Arc::new(settings.forgetting.policies.clone()),
    };
    let now = Utc::now();
    if dry_run {
        let (plan, report) = retention.plan(now).await?;
        writeln!(
            out,
            "| tenant | subject | memory | verdict | score | reason |"
        )?;
        writeln!(out, "|---|---|---|---|---:|---|")?;
        for (tenant, decision, _) in &plan {
            let verdict = match decision.verdict {
                Verdict::Keep => "keep",
                Verdict::Archive => "archive",
                Verdict::Expire => "expire",
            };
            writeln!(
                out,
                "| {tenant} | {} | {} | {verdict} | {:.4} | {} |",
                decision.subject, decision.memory_id, decision.score, decision.reason
            )?;
        }
        writeln!(out,
            "\n{} memories of {} subjects scored: {} would be archived, {} would expire (dry run: nothing changed)",
            report.memories,
            report.subjects,
            plan.iter().filter(|(_, d, _)| d.verdict == Verdict::Archive).count(),
            plan.iter().filter(|(_, d, _)| d.verdict == Verdict::Expire).count(),
        )?;
        let episodes = retention.plan_episodes(now).await?;
        writeln!(
            out,
            "\n| tenant | subject | episode (message event) | rule | reason |"
        )?;
        writeln!(out, "|---|---|---|---|---|")?;
        for (tenant, subject, decision) in &episodes.decisions {
            let rule = match decision.rule {
                EpisodeRule::Ttl => "ttl",
                EpisodeRule::Cap => "cap",
            };
            for message in &decision.messages {
                writeln!(
                    out,
                    "| {tenant} | {subject} | {message} | {rule} | {} |",
                    decision.reason
                )?;
            }
        }
        writeln!(out,
            "\n{} searchable episodes of {} subjects: {} would be forgotten (dry run: nothing changed)",
            episodes.episodes,
            episodes.subjects,
            episodes.forgotten()
        )?;
    } else {
        let report = retention.run(now).await?;
        writeln!(out,
            "{} memories of {} subjects scored: {} archived, {} expired, {} skipped (changed meanwhile)",
            report.memories, report.subjects, report.archived, report.expired, report.skipped
        )?;
        writeln!(
            out,
            "{} searchable episodes: {} forgotten",
            report.episodes, report.episodes_forgotten
        )?;
    }
    stores.close().await;
    Ok(out)
}
