//! The data dir's lock (`serve.lock`). A process that keeps a store in its
//! data dir (the SQLite database, the in-process bus, a qdrant-edge
//! collection: an embedded store, which one process at a time may open)
//! holds the lock for its whole life. The holder writes its program and pid
//! into the file, so a process that is refused can say who holds it, and
//! what to do instead.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Write as _};
use std::path::Path;

use mnemo_config::Settings;

use crate::application::SERVE_LOCK_FILE;
use crate::roles::Roles;

/// Who holds the lock, as its holder wrote it ("mnemo serve (pid 42)").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder(pub String);

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Takes the lock for `program`, or tells who holds it. The file is opened
/// without truncating it: the holder's name is in it. The lock goes with
/// the returned file (or with the process, however it ends).
pub fn try_take(data_dir: &Path, program: &str) -> std::io::Result<Result<File, Holder>> {
    let mut file = open(data_dir)?;
    match file.try_lock() {
        Ok(()) => {
            file.set_len(0)?;
            writeln!(file, "{program} (pid {})", std::process::id())?;
            Ok(Ok(file))
        }
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            // A holder that has not written its name yet (or a file that
            // cannot be read) leaves it unnamed.
            let _ = file.read_to_string(&mut text);
            let named = text.lines().next().unwrap_or("").trim();
            Ok(Err(Holder(match named {
                "" => "another mnemo process".to_owned(),
                named => named.chars().take(200).collect(),
            })))
        }
        Err(TryLockError::Error(error)) => Err(error),
    }
}

/// The lock file, created when missing and never truncated on open.
pub(crate) fn open(data_dir: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(data_dir.join(SERVE_LOCK_FILE))
}

/// The stores a process with `roles` keeps in its data dir under
/// `settings`, each with the setting that would share it instead. Empty
/// when every store it opens is shared: such processes may run on one data
/// dir together (ingest opens no vector index, so it needs no Qdrant).
pub(crate) fn embedded_stores(
    settings: &Settings,
    roles: Roles,
) -> Vec<(&'static str, &'static str)> {
    let mut stores = Vec::new();
    if settings.database.is_none() {
        stores.push(("its SQLite database", "MNEMO_DATABASE_URL"));
    }
    if settings.kafka.is_none() {
        stores.push(("the in-process bus", "MNEMO_KAFKA_BROKERS"));
    }
    if settings.qdrant.is_none() && roles.needs_vectors() {
        stores.push(("its qdrant-edge vector index", "MNEMO_QDRANT_URL"));
    }
    stores
}

/// Why `roles`' program may not start on the data dir `holder` holds, and
/// what to do: the words an operator who started two processes on one
/// data dir needs.
pub(crate) fn refusal(settings: &Settings, roles: Roles, holder: &Holder) -> anyhow::Error {
    let program = roles.program();
    let stores = embedded_stores(settings, roles);
    let kept = join(&stores.iter().map(|(store, _)| *store).collect::<Vec<_>>());
    let missing: Vec<&str> = stores.iter().map(|(_, setting)| *setting).collect();
    let advice = if roles == Roles::ALL && settings.database.is_none() {
        "Stop the other one, or give this one a data dir of its own \
         (--data-dir or MNEMO_DATA_DIR)."
            .to_owned()
    } else if missing == ["MNEMO_QDRANT_URL"] {
        "Set MNEMO_QDRANT_URL so the services share a Qdrant server, or run the \
         retriever, consolidator and forgetter as one `mnemo serve` (docs/scale-out.md, \
         \"Without Docker\"). A data dir per process would not do: each would keep a \
         collection of its own, which the others never update or erase from."
            .to_owned()
    } else {
        format!(
            "Set {} so the processes share those stores (docs/scale-out.md). A data dir per \
             process would not do: each would keep stores of its own, which the others never \
             update or erase from.",
            join(&missing)
        )
    };
    anyhow::anyhow!(
        "{program} cannot use the data dir {}: {holder} is running on it, and {program} \
         keeps {kept} there, which one process at a time may open. {advice}",
        settings.data_dir.display()
    )
}

fn join(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_learns_the_holder_and_the_name_survives_its_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let held = try_take(dir.path(), "mnemo-retriever").unwrap().unwrap();
        let refused = try_take(dir.path(), "mnemo-consolidator")
            .unwrap()
            .unwrap_err();
        assert_eq!(
            refused.0,
            format!("mnemo-retriever (pid {})", std::process::id())
        );
        // The refused attempt truncated nothing: a third is told the same.
        let again = try_take(dir.path(), "mnemo serve").unwrap().unwrap_err();
        assert_eq!(again, refused);
        drop(held);
        let taken = try_take(dir.path(), "mnemo serve").unwrap();
        assert!(taken.is_ok(), "released with its file");
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(join(&["a"]), "a");
        assert_eq!(join(&["a", "b"]), "a and b");
        assert_eq!(join(&["a", "b", "c"]), "a, b and c");
    }
}
