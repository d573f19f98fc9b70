-- Per-(tenant, subject) data keys, wrapped by the master key. One live key
-- per subject; erasure deletes the row (crypto-shredding). Not append-only
-- on purpose: destroying a key is the point.
CREATE TABLE subject_keys (
    tenant_id     TEXT        NOT NULL,
    subject_id    TEXT        NOT NULL,
    key_id        TEXT        NOT NULL,
    wrapped_key   BYTEA       NOT NULL,
    master_key_id TEXT        NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject_id)
);
CREATE UNIQUE INDEX subject_keys_key_id ON subject_keys (key_id);

ALTER TABLE subject_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE subject_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY subject_keys_tenant ON subject_keys
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''))
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), ''));

-- No UPDATE: a key is created once and destroyed, never rewritten.
GRANT SELECT, INSERT, DELETE ON subject_keys TO mnemo_app;
