-- duragent schema 3: exactly once across nodes (issue 24 item 3).

-- Inbound platform messages claimed by a node before it handles them. The primary key is
-- the de-duplication: the same Telegram update, Discord message or external-gateway message
-- delivered to two nodes is handled by the first claim only. ``done`` once the message is
-- recorded (or deliberately dropped); a claim not done by ``expires_at`` (its node died
-- before recording it) may be taken over, so a redelivery is never lost.
CREATE TABLE inbound_claims (
    gateway    text NOT NULL,
    chat_id    text NOT NULL,
    message_id text NOT NULL,
    node       text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    done       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (gateway, chat_id, message_id)
);
CREATE INDEX inbound_claims_by_age ON inbound_claims (claimed_at);

-- Loops that must run on one node only (Telegram long polling, the Discord gateway
-- connection, the scheduler's loop): a lease per loop name, renewed by its holder; another
-- node takes it once it expired. ``epoch`` grows with every change of holder.
CREATE TABLE leader_leases (
    name       text PRIMARY KEY,
    holder     text,
    epoch      bigint NOT NULL DEFAULT 0,
    expires_at timestamptz
);

-- Each schedule due time started once cluster-wide: claimed (inserted) before its first
-- attempt starts; a second claim of the same key is refused by the primary key.
CREATE TABLE schedule_fires (
    schedule_id text NOT NULL,
    due_ms      bigint NOT NULL,
    node        text NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule_id, due_ms)
);
