-- duragent schema 1: sessions (with lease columns), events, snapshots, chat index,
-- schedules and their run logs. Applied once, in one transaction, by schema.migrate.

-- One row per session copy. A live session and quarantined copies with the same id may
-- coexist (as sessions/<id>/ and sessions/_quarantine/<id>/ do on disk), so rows are keyed
-- by an internal number; at most one live row per session id.
CREATE TABLE sessions (
    session_key      bigserial PRIMARY KEY,
    session_id       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    quarantined_at   timestamptz,
    quarantine_reason text,
    -- The lease (issue 24 item 2): which node owns the session's actor, under which epoch,
    -- until when. Every write checks the epoch in its own transaction (the fence).
    owner_node       text,
    epoch            bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    -- Whether an event was ever appended (an event log "exists", as events.jsonl does).
    log_written      boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX sessions_one_live_row ON sessions (session_id) WHERE quarantined_at IS NULL;
CREATE INDEX sessions_quarantined ON sessions (session_id) WHERE quarantined_at IS NOT NULL;

-- Events, live and archived (a rollover in archive mode flips ``archived``; in discard mode
-- deletes). The primary key refuses a second event with the same seq.
CREATE TABLE events (
    session_key bigint NOT NULL REFERENCES sessions ON DELETE CASCADE,
    seq         bigint NOT NULL CHECK (seq >= 1),
    archived    boolean NOT NULL DEFAULT false,
    event       json NOT NULL,
    PRIMARY KEY (session_key, seq)
);

-- The latest snapshot of a session; ``header`` is the snapshot without its conversation
-- (listings read it alone). ``json``, not ``jsonb``: kept verbatim, and \u0000 is allowed.
CREATE TABLE snapshots (
    session_key bigint PRIMARY KEY REFERENCES sessions ON DELETE CASCADE,
    header      json NOT NULL,
    body        json NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT now()
);

-- Chat key (gateway, chat_id, agent) -> session id.
CREATE TABLE chats (
    gateway    text NOT NULL,
    chat_id    text NOT NULL,
    agent      text NOT NULL,
    session_id text NOT NULL,
    PRIMARY KEY (gateway, chat_id, agent)
);
CREATE INDEX chats_by_session ON chats (session_id);

-- Schedules (a mapping, as the file backend stores its YAML) and their runs.
CREATE TABLE schedules (
    schedule_id text PRIMARY KEY,
    schedule    json NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE schedule_runs (
    schedule_id text NOT NULL,
    run_no      bigserial,
    run         json NOT NULL,
    PRIMARY KEY (schedule_id, run_no)
);
