-- Events stored before tags, session ids and message ids were sealed hold
-- them in plain form. An erasure redacts them: the one change the log
-- accepts, enforced here. An UPDATE passes only when every column but the
-- payload and the metadata is unchanged, the payload is the old one with
-- exactly these fields (where present) replaced by the erased marker, and
-- the metadata is unchanged or loses only its correlation id. Anything
-- else is still refused.
DROP TRIGGER events_refuse_update;

CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
WHEN NOT (
        NEW.global_position IS OLD.global_position
    AND NEW.event_id IS OLD.event_id
    AND NEW.tenant_id IS OLD.tenant_id
    AND NEW.stream_id IS OLD.stream_id
    AND NEW.stream_version IS OLD.stream_version
    AND NEW.subject_id IS OLD.subject_id
    AND NEW.event_type IS OLD.event_type
    AND NEW.schema_version IS OLD.schema_version
    AND NEW.actor IS OLD.actor
    AND NEW.recorded_at IS OLD.recorded_at
    AND NEW.payload IS json_replace(OLD.payload,
            '$.tags', json('{"$erased":true}'),
            '$.session', json('{"$erased":true}'),
            '$.message_id', json('{"$erased":true}'))
    AND (NEW.metadata IS OLD.metadata
         OR NEW.metadata IS json_remove(OLD.metadata, '$.correlation_id'))
)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: UPDATE refused');
END;
