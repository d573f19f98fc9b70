-- The event log: the source of truth. Append-only, enforced by the database.
CREATE TABLE events (
    global_position INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id        TEXT    NOT NULL UNIQUE,
    tenant_id       TEXT    NOT NULL,
    stream_id       TEXT    NOT NULL,
    stream_version  INTEGER NOT NULL CHECK (stream_version > 0),
    subject_id      TEXT,
    event_type      TEXT    NOT NULL,
    schema_version  INTEGER NOT NULL,
    actor           TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    metadata        TEXT    NOT NULL,
    -- Unix microseconds, so time filters compare numbers.
    recorded_at     INTEGER NOT NULL,
    UNIQUE (tenant_id, stream_id, stream_version)
);
CREATE INDEX events_tenant_subject ON events (tenant_id, subject_id, global_position);
CREATE INDEX events_tenant_type ON events (tenant_id, event_type, global_position);
CREATE INDEX events_tenant_actor ON events (tenant_id, actor, global_position);
CREATE INDEX events_tenant_time ON events (tenant_id, recorded_at);

CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: UPDATE refused');
END;

CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: DELETE refused');
END;
