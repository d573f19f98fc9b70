-- Key generations (issue 11: erased stays erased). Each key of a subject has
-- a generation: 1 for its first, one more after each erasure. Ids that must
-- start afresh after an erasure (a client's message ids) are derived with it.
--
-- Keys that exist now were created before generations were counted: they
-- are generation 0, and their subjects' ids keep the derivation they had, so
-- a retry across the upgrade is still a duplicate. The default is dropped
-- afterwards: every key created from now on must name its generation.
ALTER TABLE subject_keys ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subject_keys ALTER COLUMN generation DROP DEFAULT;

-- What is left of a destroyed key: which one it was and its generation, so
-- the subject's next key counts on from it. No key material: the row in
-- subject_keys is deleted. The subject id is the pseudonymous one the log's
-- erasure events carry already.
CREATE TABLE subject_key_tombstones (
    tenant_id    TEXT        NOT NULL,
    subject_id   TEXT        NOT NULL,
    key_id       TEXT        NOT NULL,
    generation   INTEGER     NOT NULL,
    destroyed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id, key_id)
);

ALTER TABLE subject_key_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE subject_key_tombstones FORCE ROW LEVEL SECURITY;
CREATE POLICY subject_key_tombstones_tenant ON subject_key_tombstones
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

-- Append-only: a tombstone is what keeps generations from being reused.
GRANT SELECT, INSERT ON subject_key_tombstones TO mnemo_app;
