//! Which parts of mnemo a process runs.

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
    /// The roles that read or write the vector index, and so need the
    /// embedder: ingest alone loads no model and opens no collection.
    pub fn needs_vectors(&self) -> bool {
        self.retriever || self.consolidator || self.forgetter
    }
}
