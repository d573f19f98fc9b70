-- The waiting messages alone, by age: the idle sweep and the backlog
-- figures (`/readyz`, `/metrics`, `mnemo status`) read only these, while
-- consolidated rows stay (as `done`) and outnumber them.
CREATE INDEX consolidation_buffer_waiting
    ON consolidation_buffer (buffered_at) WHERE NOT done;
