-- duragent schema 3: the nodes of a deployment (issue 24 item 2, session leases end to end).
-- Each serving node registers the URL other nodes forward a session's requests to, and
-- refreshes its heartbeat with its lease renewals; a node whose heartbeat is old is treated
-- as gone (its sessions are taken over once their leases expire, never forwarded to it).
CREATE TABLE nodes (
    node_id      text PRIMARY KEY,
    base_url     text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- The key nodes sign forwarded requests with (HMAC): made by the first node that needs it.
-- Whoever can read this database can act as a node; no one else can.
CREATE TABLE cluster_secret (
    id     integer PRIMARY KEY CHECK (id = 1),
    secret text NOT NULL
);
