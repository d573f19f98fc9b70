-- The memory read model: current state of each memory, in plaintext for
-- search and listing. A projection of the log (rebuildable by replay), and
-- physically deleted on erasure.
--
-- Ids and names compare bytewise (COLLATE "C"), as in SQLite: memory ids
-- are UUIDv7 strings whose byte order is time order, which the keyset
-- paging relies on.
CREATE TABLE memories (
    tenant_id      TEXT COLLATE "C" NOT NULL,
    memory_id      TEXT COLLATE "C" NOT NULL,
    subject_id     TEXT COLLATE "C" NOT NULL,
    kind           TEXT        NOT NULL,
    content        TEXT        NOT NULL,
    -- An array rather than SQLite's side table: "has every tag" is `@>`.
    tags           TEXT[]      NOT NULL,
    confidence     REAL        NOT NULL,
    importance     REAL        NOT NULL,
    state          TEXT        NOT NULL,
    version        BIGINT      NOT NULL,
    provenance     JSONB       NOT NULL,
    session_id     TEXT,
    agent_id       TEXT,
    reinforcements BIGINT      NOT NULL,
    superseded_by  TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX memories_subject ON memories (tenant_id, subject_id, memory_id);
CREATE INDEX memories_tags ON memories USING GIN (tags);

ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
CREATE POLICY memories_tenant ON memories
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));
-- The forgetter's pass lists (tenant, subject) pairs across tenants. The
-- system role sees every row but only those two columns: never content.
CREATE POLICY memories_system_read ON memories FOR SELECT TO mnemo_system USING (true);

GRANT SELECT, INSERT, UPDATE, DELETE ON memories TO mnemo_app;
GRANT SELECT (tenant_id, subject_id) ON memories TO mnemo_system;
