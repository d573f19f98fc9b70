-- The in-process bus of the embedded mode: durable topic records and the
-- committed offset of each consumer group, so a restarted consumer resumes
-- where it stopped.
CREATE TABLE bus_records (
    topic        TEXT    NOT NULL,
    partition    INTEGER NOT NULL,
    "offset"     INTEGER NOT NULL,
    record_key   TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    headers      TEXT    NOT NULL,
    published_at INTEGER NOT NULL,
    PRIMARY KEY (topic, partition, "offset")
);

CREATE TABLE bus_offsets (
    group_id    TEXT    NOT NULL,
    topic       TEXT    NOT NULL,
    partition   INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
);

-- How far the relay has published the event log.
CREATE TABLE relay_checkpoints (
    name     TEXT    PRIMARY KEY,
    position INTEGER NOT NULL
);
