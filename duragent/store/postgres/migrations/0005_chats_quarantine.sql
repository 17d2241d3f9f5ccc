-- duragent schema 5: chat map rows the code cannot use are moved aside, with why (issue 34).
-- A row of ``chats`` whose key or session id names no possible session (chat_index.check_entry)
-- is moved here by the first node that reads it, in the transaction that deletes it, so the
-- chat's next message can map a new session instead of meeting the bad row again. Rows stay
-- (listed by /readyz and doctor) until someone deletes them; a fixed row can be inserted
-- back into ``chats`` by hand.
CREATE TABLE chats_quarantine (
    quarantine_key bigserial PRIMARY KEY,
    gateway        text NOT NULL,
    chat_id        text NOT NULL,
    agent          text NOT NULL,
    session_id     text NOT NULL,
    reason         text NOT NULL,
    quarantined_at timestamptz NOT NULL DEFAULT now()
);
