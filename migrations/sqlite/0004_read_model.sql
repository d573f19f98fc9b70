-- The memory read model: current state of each memory, in plaintext for
-- search and listing. A projection of the log (rebuildable by replay), and
-- physically deleted on erasure.
CREATE TABLE memories (
    tenant_id      TEXT    NOT NULL,
    memory_id      TEXT    NOT NULL,
    subject_id     TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    content        TEXT    NOT NULL,
    tags           TEXT    NOT NULL,
    confidence     REAL    NOT NULL,
    importance     REAL    NOT NULL,
    state          TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    provenance     TEXT    NOT NULL,
    session_id     TEXT,
    agent_id       TEXT,
    reinforcements INTEGER NOT NULL,
    superseded_by  TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX memories_subject ON memories (tenant_id, subject_id, memory_id);

CREATE TABLE memory_tags (
    tenant_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    tag       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, memory_id, tag)
);
CREATE INDEX memory_tags_tag ON memory_tags (tenant_id, tag);
