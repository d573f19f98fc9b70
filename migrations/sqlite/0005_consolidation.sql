-- Messages waiting for consolidation, per conversation. Durable so a
-- consumer can commit its bus offset as soon as a message is buffered and a
-- crash loses nothing: the buffer, not the offset, says what is pending.
-- Consolidated messages stay as `done` rows (ids only), so a replayed or
-- redelivered message is never consolidated twice.
CREATE TABLE consolidation_buffer (
    tenant_id   TEXT    NOT NULL,
    subject_id  TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    buffered_at INTEGER NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX consolidation_buffer_conversation
    ON consolidation_buffer (tenant_id, subject_id, session_id, done, position);

-- Retrieval use per memory, from access signals: what the forgetter scores.
CREATE TABLE memory_usage (
    tenant_id        TEXT    NOT NULL,
    memory_id        TEXT    NOT NULL,
    subject_id       TEXT    NOT NULL,
    accesses         INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX memory_usage_subject ON memory_usage (tenant_id, subject_id);
