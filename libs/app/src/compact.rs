//! `mnemo compact`: hands the embedded database's free pages back to the
//! file system, with no server on the data dir.
//!
//! SQLite reuses the pages a delete frees but never shrinks the file by
//! itself: after a burst the in-process bus's copy of what was in flight
//! (pruned every minute once every group has it), a retention pass or
//! erasures leave `mnemo.db` at the largest size it reached. Compacting
//! deletes the bus records every consumer group has committed (what the
//! server's minute would have), then rewrites the file without its free
//! pages (`VACUUM`) and empties the write-ahead log. The rewrite needs free
//! disk for a copy of the live pages, and the whole database to itself:
//! hence the data dir's lock, which a running server holds.

use std::path::Path;

use anyhow::Context;
use mnemo_bus::in_process::InProcessBus;
use mnemo_config::Settings;
use sqlx::SqlitePool;

use crate::data_dir_lock;
use crate::roles::Roles;

/// What a compaction did, for its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// `mnemo.db` and its WAL before, in bytes.
    pub before: u64,
    /// The same after.
    pub after: u64,
    /// Free pages the file held (after the bus prune), each of `page_size`.
    pub free_pages: u64,
    pub page_size: u64,
    /// Bus records deleted because every group had committed them.
    pub bus_records_deleted: u64,
}

impl std::fmt::Display for Compacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "compacted: {} bus records every consumer group had committed deleted; \
             {} free pages of {} bytes given back; mnemo.db and its WAL {} bytes before, {} bytes after",
            self.bus_records_deleted, self.free_pages, self.page_size, self.before, self.after
        )
    }
}

/// Compacts the data dir's database. Refuses while another process holds
/// the data dir (a server, a role process, another compaction) or a
/// `mnemo reindex` builds from it.
pub async fn run(settings: &Settings) -> anyhow::Result<Compacted> {
    let database = settings.database_file();
    anyhow::ensure!(
        database.exists(),
        "{} holds no database: nothing to compact",
        settings.data_dir.display()
    );
    let _lock = match data_dir_lock::try_take(&settings.data_dir, "mnemo compact")
        .with_context(|| format!("cannot open the lock of {}", settings.data_dir.display()))?
    {
        Ok(lock) => lock,
        Err(holder) => anyhow::bail!(
            "{holder} has {} open: stop it first (compacting rewrites the database file, \
             which no other process may have open)",
            settings.data_dir.display()
        ),
    };
    // A reindex reads the log for minutes without the data dir's lock; the
    // rewrite would fail on its open reads with no word of why.
    let _reindex = match std::fs::File::open(crate::reindex::lock_file(settings)) {
        Ok(file) => match file.try_lock() {
            Ok(()) => Some(file),
            Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
                "mnemo reindex is building a collection from {}: compact after it finishes",
                settings.data_dir.display()
            ),
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(error).context("cannot lock the reindex's lock file")
            }
        },
        // No reindex ever ran here.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(error).context("cannot open the reindex's lock file"),
    };
    let before = size_with_wal(&database);
    let pool = mnemo_event_store::sqlite::connect(&database)
        .await
        .with_context(|| format!("cannot open {}", database.display()))?;
    let compacted = compact(&pool, settings).await;
    pool.close().await;
    let (bus_records_deleted, free_pages, page_size) = compacted?;
    Ok(Compacted {
        before,
        after: size_with_wal(&database),
        free_pages,
        page_size,
        bus_records_deleted,
    })
}

/// The bus prune, then the rewrite: (records deleted, free pages, page size).
async fn compact(pool: &SqlitePool, settings: &Settings) -> anyhow::Result<(u64, u64, u64)> {
    // Every role's groups read the bus, whichever roles ran here: a group
    // that never committed keeps its topics whole.
    let groups = Roles::ALL.groups();
    let readers: Vec<(&str, &[&str])> = groups.iter().map(|g| (g.name, g.topics)).collect();
    let deleted = InProcessBus::new(pool.clone(), settings.bus_partitions)
        .prune(&readers)
        .await
        .context("cannot prune the bus")?;
    let pragma = |name: &'static str| async move {
        sqlx::query_scalar::<_, i64>(name)
            .fetch_one(pool)
            .await
            .with_context(|| format!("cannot read {name}"))
    };
    let free_pages = pragma("PRAGMA freelist_count").await?;
    let page_size = pragma("PRAGMA page_size").await?;
    // VACUUM rewrites the file through the WAL; the checkpoints before and
    // after leave the WAL empty, so the pages it held go too.
    mnemo_event_store::sqlite::checkpoint_truncate(pool).await?;
    sqlx::query("VACUUM")
        .execute(pool)
        .await
        .context("VACUUM failed (it needs free disk for a copy of the live pages)")?;
    mnemo_event_store::sqlite::checkpoint_truncate(pool).await?;
    Ok((deleted, free_pages as u64, page_size as u64))
}

/// The database file's size plus its WAL's (0 for a missing file).
fn size_with_wal(database: &Path) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    size(database) + size(Path::new(&wal))
}
