//! Which parts of mnemo a process runs.

use mnemo_bus::{topics, ConsumerOptions};

/// Which parts of mnemo a process runs: all of them (`mnemo serve`) or one
/// service of the scale-out deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    /// The write API (messages, memories, erasure requests).
    pub ingest: bool,
    /// The read API and the projections it reads.
    pub retriever: bool,
    pub consolidator: bool,
    /// Erasure, access signals and the retention pass.
    pub forgetter: bool,
    /// Publishes the log to the bus; runs beside ingest, the writer.
    pub relay: bool,
}

impl Roles {
    pub const ALL: Roles = Roles {
        ingest: true,
        retriever: true,
        consolidator: true,
        forgetter: true,
        relay: true,
    };
    const NONE: Roles = Roles {
        ingest: false,
        retriever: false,
        consolidator: false,
        forgetter: false,
        relay: false,
    };
    pub const INGEST: Roles = Roles {
        ingest: true,
        relay: true,
        ..Roles::NONE
    };
    pub const RETRIEVER: Roles = Roles {
        retriever: true,
        ..Roles::NONE
    };
    pub const CONSOLIDATOR: Roles = Roles {
        consolidator: true,
        ..Roles::NONE
    };
    pub const FORGETTER: Roles = Roles {
        forgetter: true,
        ..Roles::NONE
    };
}

impl Roles {
    /// The program that runs these roles, for what it tells an operator:
    /// a service binary's name, or `mnemo serve` for every role.
    pub fn program(&self) -> &'static str {
        match *self {
            Roles::ALL => "mnemo serve",
            Roles::INGEST => "mnemo-ingest",
            Roles::RETRIEVER => "mnemo-retriever",
            Roles::CONSOLIDATOR => "mnemo-consolidator",
            Roles::FORGETTER => "mnemo-forgetter",
            _ => "mnemo",
        }
    }

    /// The roles that read or write the vector index, and so need the
    /// embedder: ingest alone loads no model and opens no collection.
    pub fn needs_vectors(&self) -> bool {
        self.retriever || self.consolidator || self.forgetter
    }
}

/// How often the episode projection flushes the vector index (and commits
/// its offsets) while it is behind: a crash redelivers at most this much,
/// and the redelivered messages are written again, unchanged.
pub const EPISODE_FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// How long the episode projection waits for more records after a run
/// before it flushes, since its last flush (`ConsumerOptions::linger`).
/// Each flush syncs every file of the vector index, and while posts
/// trickle in, each run was one post: one flush per post. Its points are
/// searchable once written; what waits is their durability.
pub const EPISODE_LINGER: std::time::Duration = std::time::Duration::from_millis(250);

/// How long the memory projection waits for more records after a run
/// before it flushes, since its last flush. A run it does not flush yet is
/// settled: its points are written at once (the consolidator's neighbour
/// lookups find them), only the index's sync and the read-model rows,
/// which must follow durable points, wait. A memory written alone after a
/// quiet spell is flushed at once.
pub const MEMORY_LINGER: std::time::Duration = std::time::Duration::from_millis(250);

/// How many subjects (record keys) the episode projection handles at once. Its
/// path is two halves: reading, sealing and embedding a delivery's turns on
/// the runtime, writing their points on the blocking pool. Two lanes let
/// one lane's write run beside the other's reads; more only queue at the
/// index's one writer.
pub const EPISODE_LANES: usize = 2;

/// A consumer group a role runs, and the topics it reads: one list, so
/// what is spawned and what `/readyz` reports the lag of cannot differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub name: &'static str,
    pub topics: &'static [&'static str],
    /// See `ConsumerOptions::flush_interval`: only for a group whose flush
    /// is durability alone.
    pub flush_interval: Option<std::time::Duration>,
    /// See `ConsumerOptions::linger`.
    pub linger: Option<std::time::Duration>,
    /// See `ConsumerOptions::lanes`: above 1 only for a group whose handler
    /// may handle records of different keys at the same time.
    pub lanes: usize,
}

impl Group {
    pub const MEMORY_PROJECTION: Group = Group {
        name: "retriever.memory-projection",
        topics: &[topics::MEMORY_EVENTS],
        flush_interval: None,
        linger: Some(MEMORY_LINGER),
        lanes: 1,
    };
    /// Its own group on the messages topic: the consolidator's group reads
    /// the same records, and neither waits for the other.
    pub const EPISODE_PROJECTION: Group = Group {
        name: "retriever.episode-projection",
        topics: &[topics::MESSAGES],
        // Its points are searchable once written; the flush only makes
        // them durable, and costs a rewrite of the index's segments.
        flush_interval: Some(EPISODE_FLUSH_INTERVAL),
        linger: Some(EPISODE_LINGER),
        // A conversation's messages and its forgotten episodes are keyed
        // by subject, so one lane holds all of a subject's records.
        lanes: EPISODE_LANES,
    };
    pub const CONSOLIDATOR: Group = Group {
        name: "consolidator",
        topics: &[topics::MESSAGES],
        flush_interval: None,
        linger: None,
        lanes: 1,
    };
    pub const ERASURE: Group = Group {
        name: "forgetter.erasure",
        topics: &[topics::SUBJECT_EVENTS],
        flush_interval: None,
        linger: None,
        lanes: 1,
    };
    pub const ACCESS: Group = Group {
        name: "forgetter.access",
        topics: &[topics::ACCESS_SIGNALS],
        flush_interval: None,
        linger: None,
        lanes: 1,
    };

    pub fn options(&self) -> ConsumerOptions {
        let mut options = ConsumerOptions::new(self.name, self.topics);
        options.flush_interval = self.flush_interval;
        options.linger = self.linger;
        options.lanes = self.lanes;
        options
    }
}

impl Roles {
    /// The consumer groups these roles run.
    pub fn groups(&self) -> Vec<Group> {
        let mut groups = Vec::new();
        if self.retriever {
            groups.extend([Group::MEMORY_PROJECTION, Group::EPISODE_PROJECTION]);
        }
        if self.consolidator {
            groups.push(Group::CONSOLIDATOR);
        }
        if self.forgetter {
            groups.extend([Group::ERASURE, Group::ACCESS]);
        }
        groups
    }
}
