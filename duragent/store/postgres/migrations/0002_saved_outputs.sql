-- duragent schema 2: full tool outputs saved per session (store/saved_outputs.py).
-- bytea, not text: a tool's output may hold a NUL byte, which text refuses.
CREATE TABLE saved_outputs (
    session_key bigint NOT NULL REFERENCES sessions ON DELETE CASCADE,
    output_id   text NOT NULL,
    content     bytea NOT NULL,
    PRIMARY KEY (session_key, output_id)
);
