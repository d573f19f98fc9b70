-- Per-(tenant, subject) data keys, wrapped by the master key. One live key per
-- subject; erasure deletes the row (crypto-shredding). This table is not
-- append-only on purpose: destroying a key is the point.
CREATE TABLE subject_keys (
    tenant_id     TEXT NOT NULL,
    subject_id    TEXT NOT NULL,
    key_id        TEXT NOT NULL,
    wrapped_key   BLOB NOT NULL,
    master_key_id TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, subject_id)
);
CREATE UNIQUE INDEX subject_keys_key_id ON subject_keys (key_id);
