-- How far the relay has published the event log. Not tenant data: only the
-- system role (the relay's login) reads and moves it.
CREATE TABLE relay_checkpoints (
    name     TEXT   PRIMARY KEY,
    position BIGINT NOT NULL
);
GRANT SELECT, INSERT, UPDATE ON relay_checkpoints TO mnemo_system;

-- Messages waiting for consolidation, per conversation. Durable so a
-- consumer can commit its bus offset as soon as a message is buffered and a
-- crash loses nothing. Consolidated messages stay as `done` rows (ids
-- only), so a replayed or redelivered message is never consolidated twice.
CREATE TABLE consolidation_buffer (
    tenant_id   TEXT        NOT NULL,
    subject_id  TEXT        NOT NULL,
    session_id  TEXT        NOT NULL,
    event_id    TEXT        NOT NULL,
    position    BIGINT      NOT NULL,
    buffered_at TIMESTAMPTZ NOT NULL,
    done        BOOLEAN     NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX consolidation_buffer_conversation
    ON consolidation_buffer (tenant_id, subject_id, session_id, done, position);

ALTER TABLE consolidation_buffer ENABLE ROW LEVEL SECURITY;
ALTER TABLE consolidation_buffer FORCE ROW LEVEL SECURITY;
CREATE POLICY consolidation_buffer_tenant ON consolidation_buffer
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));
-- The consolidator's idle scan spans tenants: the system role sees which
-- conversations wait and since when, never an event id.
CREATE POLICY consolidation_buffer_system_read ON consolidation_buffer
    FOR SELECT TO mnemo_system USING (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON consolidation_buffer TO mnemo_app;
GRANT SELECT (tenant_id, subject_id, session_id, buffered_at, done)
    ON consolidation_buffer TO mnemo_system;

-- Retrieval use per memory, from access signals: what the forgetter scores.
CREATE TABLE memory_usage (
    tenant_id        TEXT        NOT NULL,
    memory_id        TEXT        NOT NULL,
    subject_id       TEXT        NOT NULL,
    accesses         BIGINT      NOT NULL,
    last_accessed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX memory_usage_subject ON memory_usage (tenant_id, subject_id);

ALTER TABLE memory_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY memory_usage_tenant ON memory_usage
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_usage TO mnemo_app;
