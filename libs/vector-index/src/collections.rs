//! Which qdrant-edge collection the embedded server opens, and how a
//! rebuilt one takes over (cargo feature `edge`).
//!
//! A collection is a qdrant-edge shard in `DATA_DIR/vectors/<dir>`, where
//! `<dir>` is the embedding space's collection name (`model__dimension`),
//! optionally followed by a generation (`.g<unix ms>`) when it was built by
//! replaying the log. (Inside it, an erasure's purge moves the shard into a
//! `shard.<n>` subdirectory; that is `EdgeVectorIndex`'s business, and the
//! collection directory stays the unit everything here works on.) `vectors/ACTIVE` names the directory the server
//! serves from. A directory holding `replay.json` was built by a replay and
//! is complete up to the position it records (when `complete` is true); the
//! server catches such a collection up from that position when it takes it
//! over, then removes the marker: from then on the live projection keeps it
//! current.
//!
//! Why generations instead of renaming: the old collection keeps serving
//! (in the running server) while the new one is built beside it, and no
//! directory a process has open is ever renamed under it.
//!
//! Why stale collections are deleted: a collection the server no longer
//! serves stops receiving erasures, so keeping it would keep an erased
//! subject's text and vectors on disk.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Why a collection directory could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum CollectionsError {
    #[error("vector collections: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot read vectors/ACTIVE: {0}")]
    Active(#[source] std::io::Error),
    #[error("cannot remove stale collection {name}: {source}")]
    RemoveStale {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a replay marker: {source}")]
    BadMarker {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot encode a replay marker: {0}")]
    EncodeMarker(#[source] serde_json::Error),
}

impl CollectionsError {
    /// A stable code for logs and tools.
    pub fn code(&self) -> &'static str {
        match self {
            CollectionsError::Io(_) | CollectionsError::Active(_) => "collections_io",
            CollectionsError::RemoveStale { .. } => "collections_remove_failed",
            CollectionsError::BadMarker { .. } => "collections_bad_marker",
            CollectionsError::EncodeMarker(_) => "collections_encode_failed",
        }
    }
}

type Result<T> = std::result::Result<T, CollectionsError>;

pub const ACTIVE_FILE: &str = "ACTIVE";
pub const MARKER_FILE: &str = "replay.json";

/// Written in a collection built by a replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayMarker {
    /// The log position the collection is complete up to (when `complete`),
    /// or the position its replay started from.
    pub replayed_to: i64,
    pub complete: bool,
    pub model: String,
    pub dimension: usize,
    pub started_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl ReplayMarker {
    /// A replay into the collection of `model` (vectors of `dimension`)
    /// starting now, from the log's start.
    pub fn started(model: &str, dimension: usize) -> Self {
        ReplayMarker {
            replayed_to: 0,
            complete: false,
            model: model.to_owned(),
            dimension,
            started_at: Utc::now(),
            completed_at: None,
        }
    }

    /// The same replay, complete up to `position`.
    pub fn completed(self, position: i64) -> Self {
        ReplayMarker {
            replayed_to: position,
            complete: true,
            completed_at: Some(Utc::now()),
            ..self
        }
    }
}

/// What the server should open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opening {
    /// The directory name under `vectors/`.
    pub name: String,
    /// Replay the log into it from this position before serving, then
    /// remove the marker. None: the collection is live and current.
    pub catch_up_from: Option<i64>,
}

/// The `vectors/` directory of a data dir.
#[derive(Debug, Clone)]
pub struct Collections {
    dir: PathBuf,
}

impl Collections {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Collections { dir: dir.into() }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The directory `ACTIVE` names, if any.
    pub fn active(&self) -> Result<Option<String>> {
        match fs::read_to_string(self.dir.join(ACTIVE_FILE)) {
            Ok(raw) => Ok(Some(raw.trim().to_owned()).filter(|n| !n.is_empty())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CollectionsError::Active(e)),
        }
    }

    /// Points `ACTIVE` at `name`, atomically (write, fsync, rename).
    pub fn set_active(&self, name: &str) -> Result<()> {
        fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!("{ACTIVE_FILE}.tmp"));
        let mut file = fs::File::create(&tmp)?;
        writeln!(file, "{name}")?;
        file.sync_all()?;
        fs::rename(&tmp, self.dir.join(ACTIVE_FILE))?;
        fs::File::open(&self.dir)?.sync_all()?;
        Ok(())
    }

    pub fn marker(&self, name: &str) -> Result<Option<ReplayMarker>> {
        read_marker(&self.path(name))
    }

    pub fn write_marker(&self, name: &str, marker: &ReplayMarker) -> Result<()> {
        let dir = self.path(name);
        fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!("{MARKER_FILE}.tmp"));
        fs::write(
            &tmp,
            serde_json::to_vec_pretty(marker).map_err(CollectionsError::EncodeMarker)?,
        )?;
        fs::File::open(&tmp)?.sync_all()?;
        fs::rename(&tmp, dir.join(MARKER_FILE))?;
        Ok(())
    }

    pub fn remove_marker(&self, name: &str) -> Result<()> {
        match fs::remove_file(self.path(name).join(MARKER_FILE)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Every collection directory, sorted by name (so generations of one
    /// space sort oldest first).
    pub fn list(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(e) => return Err(e.into()),
        };
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort_by_key(|name| (base_of(name).to_owned(), generation_of(name)));
        Ok(names)
    }

    /// A directory name for a new generation of `base`.
    pub fn new_generation(&self, base: &str) -> String {
        let mut millis = Utc::now().timestamp_millis();
        // Two builds in one millisecond (tests) must not share a directory.
        while self.path(&format!("{base}.g{millis}")).exists() {
            millis += 1;
        }
        format!("{base}.g{millis}")
    }

    /// Decides what the server opens for the embedding space `base`:
    /// 1. the newest complete replayed generation of `base` not yet taken
    ///    over (a `mnemo reindex` ran), caught up from its position;
    /// 2. else the active collection, if it belongs to `base` (caught up
    ///    from its marker when a take-over was interrupted);
    /// 3. else, with no `ACTIVE` file (a data dir from before it existed),
    ///    `vectors/<base>` as it is;
    /// 4. else a new generation replayed from the start of the log: the
    ///    model changed without a reindex, and the live projection alone
    ///    would never bring the memories already in the log into it.
    pub fn plan(&self, base: &str) -> Result<Opening> {
        let active = self.active()?;
        let names = self.list()?;
        let staged = names
            .iter()
            .filter(|n| base_of(n) == base && Some(n.as_str()) != active.as_deref())
            .filter_map(|n| match self.marker(n) {
                Ok(Some(m)) if m.complete => Some(Ok((n.clone(), m))),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some((name, marker)) = staged.into_iter().max_by_key(|(n, _)| generation_of(n)) {
            return Ok(Opening {
                name,
                catch_up_from: Some(marker.replayed_to),
            });
        }
        if let Some(active) = active.filter(|a| base_of(a) == base && self.path(a).is_dir()) {
            let catch_up_from = self.marker(&active)?.map(|m| m.replayed_to);
            return Ok(Opening {
                name: active,
                catch_up_from,
            });
        }
        if self.active()?.is_none() && self.path(base).is_dir() && self.marker(base)?.is_none() {
            return Ok(Opening {
                name: base.to_owned(),
                catch_up_from: None,
            });
        }
        Ok(Opening {
            name: self.new_generation(base),
            catch_up_from: Some(0),
        })
    }

    /// After `name` took over: deletes the collections nobody will serve
    /// again — former live ones (no marker) and other replayed generations
    /// of the same space — and returns their names. Incomplete builds of
    /// other spaces are left alone: a `mnemo reindex` may be writing them.
    pub fn remove_stale(&self, name: &str) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for other in self.list()? {
            if other == name {
                continue;
            }
            let stale = match self.marker(&other)? {
                None => true,
                Some(marker) => base_of(&other) == base_of(name) && marker.complete,
            };
            if stale {
                fs::remove_dir_all(self.path(&other)).map_err(|source| {
                    CollectionsError::RemoveStale {
                        name: other.clone(),
                        source,
                    }
                })?;
                removed.push(other);
            }
        }
        Ok(removed)
    }

    /// Deletes unfinished builds (a crashed `mnemo reindex`), except the
    /// active collection; called by reindex while it holds its lock.
    pub fn remove_unfinished(&self) -> Result<Vec<String>> {
        let active = self.active()?;
        let mut removed = Vec::new();
        for name in self.list()? {
            if Some(&name) == active.as_ref() {
                continue;
            }
            if matches!(self.marker(&name)?, Some(m) if !m.complete) {
                fs::remove_dir_all(self.path(&name))?;
                removed.push(name);
            }
        }
        Ok(removed)
    }
}

fn read_marker(dir: &Path) -> Result<Option<ReplayMarker>> {
    match fs::read(dir.join(MARKER_FILE)) {
        Ok(raw) => Ok(Some(serde_json::from_slice(&raw).map_err(|source| {
            CollectionsError::BadMarker {
                path: dir.join(MARKER_FILE),
                source,
            }
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `model__384.g1700000000000` → `model__384`. Collection names never hold
/// a dot (`EmbeddingSpace::collection_name` replaces it).
pub fn base_of(name: &str) -> &str {
    name.split_once(".g").map_or(name, |(base, _)| base)
}

fn generation_of(name: &str) -> i64 {
    name.split_once(".g")
        .and_then(|(_, g)| g.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(complete: bool, replayed_to: i64) -> ReplayMarker {
        ReplayMarker {
            replayed_to,
            complete,
            model: "m".into(),
            dimension: 4,
            started_at: Utc::now(),
            completed_at: complete.then(Utc::now),
        }
    }

    fn collections() -> (tempfile::TempDir, Collections) {
        let dir = tempfile::tempdir().unwrap();
        let collections = Collections::new(dir.path().join("vectors"));
        (dir, collections)
    }

    #[test]
    fn a_new_space_is_replayed_from_the_start() {
        let (_dir, c) = collections();
        let opening = c.plan("m__4").unwrap();
        assert_eq!(base_of(&opening.name), "m__4");
        assert_ne!(opening.name, "m__4", "a replayed build gets a generation");
        assert_eq!(opening.catch_up_from, Some(0));
    }

    #[test]
    fn a_data_dir_from_before_active_existed_keeps_its_collection() {
        let (_dir, c) = collections();
        fs::create_dir_all(c.path("m__4")).unwrap();
        assert_eq!(
            c.plan("m__4").unwrap(),
            Opening {
                name: "m__4".into(),
                catch_up_from: None
            }
        );
        // ...but not for another model: that one starts from the log.
        assert_eq!(c.plan("other__8").unwrap().catch_up_from, Some(0));
    }

    #[test]
    fn the_active_collection_is_served_as_it_is() {
        let (_dir, c) = collections();
        fs::create_dir_all(c.path("m__4.g5")).unwrap();
        c.set_active("m__4.g5").unwrap();
        assert_eq!(
            c.plan("m__4").unwrap(),
            Opening {
                name: "m__4.g5".into(),
                catch_up_from: None
            }
        );
    }

    #[test]
    fn an_interrupted_take_over_catches_up_again() {
        let (_dir, c) = collections();
        c.write_marker("m__4.g5", &marker(true, 42)).unwrap();
        c.set_active("m__4.g5").unwrap();
        assert_eq!(c.plan("m__4").unwrap().catch_up_from, Some(42));
    }

    #[test]
    fn the_newest_complete_build_takes_over_and_unfinished_ones_do_not() {
        let (_dir, c) = collections();
        fs::create_dir_all(c.path("m__4")).unwrap();
        c.set_active("m__4").unwrap();
        c.write_marker("m__4.g10", &marker(true, 7)).unwrap();
        c.write_marker("m__4.g20", &marker(true, 9)).unwrap();
        c.write_marker("m__4.g30", &marker(false, 0)).unwrap();
        assert_eq!(
            c.plan("m__4").unwrap(),
            Opening {
                name: "m__4.g20".into(),
                catch_up_from: Some(9)
            }
        );
    }

    #[test]
    fn a_build_for_another_model_waits_for_that_model() {
        let (_dir, c) = collections();
        fs::create_dir_all(c.path("m__4")).unwrap();
        c.set_active("m__4").unwrap();
        c.write_marker("other__8.g10", &marker(true, 7)).unwrap();
        assert_eq!(c.plan("m__4").unwrap().name, "m__4");
        assert_eq!(
            c.plan("other__8").unwrap(),
            Opening {
                name: "other__8.g10".into(),
                catch_up_from: Some(7)
            }
        );
    }

    #[test]
    fn taking_over_removes_former_live_collections_and_older_builds() {
        let (_dir, c) = collections();
        fs::create_dir_all(c.path("m__4")).unwrap(); // former live, same model
        fs::create_dir_all(c.path("old__2")).unwrap(); // former live, other model
        c.write_marker("m__4.g10", &marker(true, 7)).unwrap(); // older build
        c.write_marker("other__8.g15", &marker(true, 7)).unwrap(); // staged for another model
        c.write_marker("other__8.g16", &marker(false, 0)).unwrap(); // being built elsewhere
        c.write_marker("m__4.g20", &marker(true, 9)).unwrap();
        c.set_active("m__4.g20").unwrap();
        c.remove_marker("m__4.g20").unwrap();
        let mut removed = c.remove_stale("m__4.g20").unwrap();
        removed.sort();
        assert_eq!(removed, vec!["m__4", "m__4.g10", "old__2"]);
        assert_eq!(
            c.list().unwrap(),
            vec!["m__4.g20", "other__8.g15", "other__8.g16"]
        );
    }

    #[test]
    fn unfinished_builds_are_removed_but_never_the_active_one() {
        let (_dir, c) = collections();
        c.write_marker("m__4.g10", &marker(false, 0)).unwrap();
        c.write_marker("m__4.g20", &marker(false, 0)).unwrap();
        c.set_active("m__4.g20").unwrap();
        assert_eq!(c.remove_unfinished().unwrap(), vec!["m__4.g10"]);
        assert_eq!(c.list().unwrap(), vec!["m__4.g20"]);
    }
}
