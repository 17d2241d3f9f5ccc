-- duragent schema 7: which reply previews are in chats, for every node (issue 40).
-- A preview is a chat message edited while its reply is written (frontkit/preview.py). Its
-- record lets a restart edit it into the reply, or delete it when the turn runs again. With
-- several nodes the node that finishes a chat may not be the one that streamed into it, so
-- the records live here, not in each node's folder (store/postgres/previews.py).
CREATE TABLE preview_records (
    gateway    text NOT NULL,
    chat_id    text NOT NULL,
    message_id text NOT NULL,
    session_id text NOT NULL,
    node       text NOT NULL,
    saved_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (gateway, chat_id, message_id)
);
