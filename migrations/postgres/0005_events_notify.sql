-- Wakes waiting relays when events commit, so they need not poll hard.
-- NOTIFY is delivered only when the inserting transaction commits (never
-- for a rollback), and identical notifications of one transaction are
-- folded into one. The payload is empty: a woken reader asks for the head.
CREATE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mnemo_events', '');
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
