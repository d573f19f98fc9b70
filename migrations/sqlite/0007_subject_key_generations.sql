-- Key generations (issue 11: erased stays erased). Each key of a subject has
-- a generation: 1 for its first, one more after each erasure. Ids that must
-- start afresh after an erasure (a client's message ids) are derived with it.
--
-- Keys that exist now were created before generations were counted: they
-- are generation 0, and their subjects' ids keep the derivation they had, so
-- a retry across the upgrade is still a duplicate. Keys created from now on
-- name their generation explicitly.
ALTER TABLE subject_keys ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

-- What is left of a destroyed key: which one it was and its generation, so
-- the subject's next key counts on from it. No key material: the wrapped key
-- is deleted from subject_keys (with secure_delete). The subject id is the
-- pseudonymous one the log's erasure events carry already.
CREATE TABLE subject_key_tombstones (
    tenant_id    TEXT    NOT NULL,
    subject_id   TEXT    NOT NULL,
    key_id       TEXT    NOT NULL,
    generation   INTEGER NOT NULL,
    destroyed_at TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, subject_id, key_id)
);
