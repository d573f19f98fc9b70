-- The waiting messages of a subject by conversation: a drain lists the
-- conversations of its subject that have messages waiting, and the
-- backlog figures count them. Through the conversation index (where
-- `done` comes after the session) that read every row the subject ever
-- buffered, consolidated ones included, on every drain.
CREATE INDEX consolidation_buffer_waiting_conversations
    ON consolidation_buffer (tenant_id, subject_id, session_id, position) WHERE done = 0;
