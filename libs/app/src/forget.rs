//! `mnemo forget [--dry-run]`: one retention pass over the data dir, the
//! same pass the running server schedules. With `--dry-run` it prints every
//! decision and its reason and changes nothing.

use std::sync::Arc;

use chrono::Utc;
use mnemo_config::Settings;
use mnemo_domain::forgetting::Verdict;
use mnemo_forgetter::retention::Retention;

use crate::stores::open_log;

pub async fn run(settings: &Settings, dry_run: bool) -> anyhow::Result<()> {
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
        println!("| tenant | subject | memory | verdict | score | reason |");
        println!("|---|---|---|---|---:|---|");
        for (tenant, decision, _) in &plan {
            let verdict = match decision.verdict {
                Verdict::Keep => "keep",
                Verdict::Archive => "archive",
                Verdict::Expire => "expire",
            };
            println!(
                "| {tenant} | {} | {} | {verdict} | {:.4} | {} |",
                decision.subject, decision.memory_id, decision.score, decision.reason
            );
        }
        println!(
            "\n{} memories of {} subjects scored: {} would be archived, {} would expire (dry run: nothing changed)",
            report.memories,
            report.subjects,
            plan.iter().filter(|(_, d, _)| d.verdict == Verdict::Archive).count(),
            plan.iter().filter(|(_, d, _)| d.verdict == Verdict::Expire).count(),
        );
    } else {
        let report = retention.run(now).await?;
        println!(
            "{} memories of {} subjects scored: {} archived, {} expired, {} skipped (changed meanwhile)",
            report.memories, report.subjects, report.archived, report.expired, report.skipped
        );
    }
    stores.close().await;
    Ok(())
}
