"""``PostgresPreviewRows``: the reply previews in chats, in a table every node sees (schema 7).

A preview's record is written before its first edit and removed once its reply is final in
its place (``frontkit.preview_store``). With one node the records are files in its
workspace; with several, the node that finishes a chat after a kill (the dead node's own
restart, or another node that took the chat over) must find the record whichever node wrote
it, or the chat keeps half a reply and gets the whole one as a second message (the month of
strangers with two nodes: three such previews). So they are rows here, one short
transaction each, committed durably as the file was made durable.
"""

from __future__ import annotations

from duragent.store.postgres.connection import Database

__all__ = ["PostgresPreviewRows"]


class PostgresPreviewRows:
    """``PreviewRows`` in ``preview_records`` (see module docstring)."""

    def __init__(self, db: Database, node_id: str) -> None:
        self._db = db
        self._node = node_id

    def save(self, gateway: str, chat_id: str, message_id: str, session_id: str) -> None:
        """Record the preview ``message_id`` in the chat, showing ``session_id``'s reply."""
        with self._db.transaction("recording a reply preview") as conn:
            conn.execute(
                "INSERT INTO preview_records (gateway, chat_id, message_id, session_id, node) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (gateway, chat_id, message_id) "
                "DO UPDATE SET session_id = excluded.session_id, node = excluded.node",
                (gateway, chat_id, message_id, session_id, self._node),
            )

    def drop(self, gateway: str, chat_id: str, message_id: str) -> None:
        """Forget the preview (its reply is final in its place, or it was deleted)."""
        with self._db.transaction("removing a reply preview's record") as conn:
            conn.execute(
                "DELETE FROM preview_records WHERE gateway = %s AND chat_id = %s "
                "AND message_id = %s",
                (gateway, chat_id, message_id),
            )

    def load(self, gateway: str) -> list[tuple[str, str, str]]:
        """``(chat_id, message_id, session_id)`` of every preview recorded in ``gateway``."""
        with self._db.transaction("reading the reply previews left in chats") as conn:
            rows = conn.execute(
                "SELECT chat_id, message_id, session_id FROM preview_records "
                "WHERE gateway = %s ORDER BY saved_at",
                (gateway,),
            ).fetchall()
        return [(str(chat), str(message), str(session)) for chat, message, session in rows]
