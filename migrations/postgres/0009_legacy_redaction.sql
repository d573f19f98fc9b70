-- Events stored before tags, session ids and message ids were sealed hold
-- them in plain form. An erasure redacts them: the one change the log
-- accepts, enforced here (for every role, the owner included). An UPDATE
-- passes only when every column but the payload and the metadata is
-- unchanged, the payload is the old one with exactly these fields (where
-- present) replaced by the erased marker, and the metadata is unchanged or
-- loses only its correlation id. mnemo_app may update those two columns
-- and nothing else.
CREATE FUNCTION events_redacted(payload jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT payload || COALESCE(
        (SELECT jsonb_object_agg(field, '{"$erased": true}'::jsonb)
           FROM unnest(ARRAY['tags', 'session', 'message_id']) AS field
          WHERE payload ? field),
        '{}'::jsonb)
$$;

CREATE FUNCTION events_allow_redaction_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.global_position IS DISTINCT FROM OLD.global_position
       OR NEW.tx_id IS DISTINCT FROM OLD.tx_id
       OR NEW.event_id IS DISTINCT FROM OLD.event_id
       OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
       OR NEW.stream_id IS DISTINCT FROM OLD.stream_id
       OR NEW.stream_version IS DISTINCT FROM OLD.stream_version
       OR NEW.subject_id IS DISTINCT FROM OLD.subject_id
       OR NEW.event_type IS DISTINCT FROM OLD.event_type
       OR NEW.schema_version IS DISTINCT FROM OLD.schema_version
       OR NEW.actor IS DISTINCT FROM OLD.actor
       OR NEW.recorded_at IS DISTINCT FROM OLD.recorded_at
       OR NEW.payload IS DISTINCT FROM events_redacted(OLD.payload)
       OR (NEW.metadata IS DISTINCT FROM OLD.metadata
           AND NEW.metadata IS DISTINCT FROM OLD.metadata - 'correlation_id') THEN
        RAISE EXCEPTION 'events are append-only: UPDATE refused';
    END IF;
    RETURN NEW;
END $$;

DROP TRIGGER events_refuse_update ON events;
CREATE TRIGGER events_allow_redaction_only BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION events_allow_redaction_only();
GRANT UPDATE (payload, metadata) ON events TO mnemo_app;
