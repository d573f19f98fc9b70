-- The event log: the source of truth. Append-only, enforced by the database.
--
-- Runs as mnemo_owner, which owns every table. mnemo_app (the services) and
-- mnemo_system (the relay and the cross-tenant passes) are created by
-- `mnemo migrate` before this runs; see docs/postgres.md.
--
-- Positions. A BIGSERIAL position is not safe for the relay: transaction A
-- may take position 5, B position 6, B commits first, and a reader that has
-- published 6 never goes back for 5. Reading only rows whose transaction id
-- is below the oldest running transaction (pg_snapshot_xmin) fixes that only
-- if positions follow transaction ids; with a sequence they do not (A can get
-- its xid, B its xid and position 5, then A position 6: A commits, B is
-- still open, 6 is published and 5 is skipped). So the position is derived
-- from the transaction id itself: (xid << 16) + n, n counting the
-- transaction's own events. Every transaction that can still commit has an
-- xid >= xmin, so its positions are above every position a reader was
-- allowed to see: read_all never skips an event. The price: positions are
-- sparse (a difference of positions is not a count of events) and at most
-- 65536 events are appended per transaction.
CREATE TABLE events (
    global_position BIGINT      PRIMARY KEY,
    tx_id           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    event_id        TEXT        NOT NULL UNIQUE,
    tenant_id       TEXT        NOT NULL,
    stream_id       TEXT        NOT NULL,
    stream_version  BIGINT      NOT NULL CHECK (stream_version > 0),
    subject_id      TEXT,
    event_type      TEXT        NOT NULL,
    schema_version  INTEGER     NOT NULL,
    actor           TEXT        NOT NULL,
    payload         JSONB       NOT NULL,
    metadata        JSONB       NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (tenant_id, stream_id, stream_version)
);
CREATE INDEX events_tenant_subject ON events (tenant_id, subject_id, global_position);
CREATE INDEX events_tenant_type ON events (tenant_id, event_type, global_position);
CREATE INDEX events_tenant_actor ON events (tenant_id, actor, global_position);
CREATE INDEX events_tenant_time ON events (tenant_id, recorded_at);

-- Assigns tx_id and the position in the database, so no writer (not even
-- raw SQL) can pick a position that breaks the relay's ordering.
CREATE FUNCTION events_assign_position() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    xid   bigint := pg_current_xact_id()::text::bigint;
    n     bigint := COALESCE(NULLIF(current_setting('mnemo.events_in_transaction', true), ''), '0')::bigint;
BEGIN
    IF xid >= (1::bigint << 47) THEN
        RAISE EXCEPTION 'transaction id % is too large for an event position', xid;
    END IF;
    IF n < 0 OR n >= 65536 THEN
        RAISE EXCEPTION 'at most 65536 events can be appended in one transaction';
    END IF;
    -- Transaction-local: reset at commit or rollback, and rolled back with
    -- a savepoint together with the row it counted.
    PERFORM set_config('mnemo.events_in_transaction', (n + 1)::text, true);
    NEW.tx_id := pg_current_xact_id();
    NEW.global_position := (xid << 16) + n;
    RETURN NEW;
END $$;

CREATE TRIGGER events_assign_position BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_assign_position();

-- Statement-level, so they fire even when row-level security hides every
-- row, and for the owner and superusers too.
CREATE FUNCTION events_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only: % refused', TG_OP;
END $$;

CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();

-- Tenant isolation. FORCE applies the policies to the owner as well. With
-- no app.tenant_id in the transaction the setting is NULL (or '' on a
-- connection that had one before), which matches no row and admits no
-- insert.
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY events_tenant ON events
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));
-- The relay reads every tenant's events (sealed payloads) in commit order.
-- Only mnemo_system may, and it can only read: a tenant session cannot turn
-- this on, because mnemo_app is not a member of mnemo_system.
CREATE POLICY events_system_read ON events FOR SELECT TO mnemo_system USING (true);

GRANT SELECT, INSERT ON events TO mnemo_app;
GRANT SELECT ON events TO mnemo_system;
