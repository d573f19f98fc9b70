-- The sealed read model. What of a memory came from the subject's
-- conversation or a client's choice (content, tags, session) is stored as
-- one blob sealed under the subject's data key (the JSON of a `$sealed`
-- marker), and the tags as keyed tokens for the tag filter. A DELETE leaves
-- a row's bytes in the relation files until vacuum reuses the space (and in
-- WAL and backups): sealed, they are ciphertext that destroying the key
-- makes unreadable.
--
-- Rows written before keep their clear columns and `sealed` NULL, and are
-- read from them; new rows leave `content` '', `tags` '{}' and `session_id`
-- NULL. A legacy row is rewritten sealed by the next event of its memory;
-- the old columns stay until none is left (rebuilding the table from the
-- log leaves none).
--
-- The new columns fall under the table's policies and mnemo_app's
-- table-wide grants; mnemo_system's column grant (tenant_id, subject_id)
-- does not reach them.
ALTER TABLE memories ADD COLUMN sealed TEXT;
ALTER TABLE memories ADD COLUMN tag_tokens TEXT[] NOT NULL DEFAULT '{}';
CREATE INDEX memories_tag_tokens ON memories USING GIN (tag_tokens);
