"""``AttachmentStorage`` in PostgreSQL: one session's attachments as rows of ``attachments``.

The same rules as the file backend (``store.attachment_blobs``): content-addressed by SHA-256,
every hash checked before it is used, a put of bytes already stored writes nothing. A put is
one transaction, so a crash or a lost connection leaves the whole row or none. Rows belong to
the session's row (``ON DELETE CASCADE``): deleting the session takes its blobs, and a
quarantined copy keeps its own.

Unlike the session's events and snapshot, a put is not fenced by the session's lease: blobs
are put by whichever node downloaded them, before the message that carries them reaches the
session's owner, and fencing would make that node claim the session. Nothing is lost by it:
a blob's row is the same whoever writes it, and no put changes or removes another.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from duragent.core.attachments import content_hash
from duragent.store.attachment_blobs import AttachmentNotFoundError, checked_hash, export_bytes
from duragent.store.postgres.snapshot_rows import LIVE

if TYPE_CHECKING:
    from duragent.store.postgres.sessions import PostgresSessionStore

__all__ = ["PostgresAttachments"]


class PostgresAttachments:
    """One session's attachments (see module docstring)."""

    def __init__(self, store: PostgresSessionStore, session_id: str) -> None:
        self._db = store.db
        self.session_id = session_id
        self.path = store.root / session_id / "attachments"
        """Where they live, for messages only."""

    def put(self, data: bytes) -> str:
        """Keep ``data`` under its hash; bytes already stored are not sent again."""
        sha = content_hash(data)
        try:
            with self._db.transaction(f"storing an attachment of {self.session_id}") as conn:
                row = conn.execute(
                    "SELECT s.session_key, EXISTS (SELECT 1 FROM attachments a "
                    "WHERE a.session_key = s.session_key AND a.sha256 = %s) "
                    "FROM sessions s WHERE s.session_id = %s AND s.quarantined_at IS NULL",
                    (sha, self.session_id),
                ).fetchone()
                if row is None:
                    raise FileNotFoundError(
                        f"session {self.session_id} is not live (deleted or quarantined?): "
                        "attachments are stored only in a live session"
                    )
                if not row[1]:
                    conn.execute(
                        "INSERT INTO attachments (session_key, sha256, content) "
                        "VALUES (%s, %s, %s) ON CONFLICT (session_key, sha256) DO NOTHING",
                        (row[0], sha, bytes(data)),
                    )
        except psycopg.errors.ForeignKeyViolation:  # the session was deleted meanwhile
            raise FileNotFoundError(f"session {self.session_id} was deleted") from None
        return sha

    def has(self, sha256: str) -> bool:
        """Whether the blob is stored."""
        checked_hash(sha256)
        with self._db.transaction(f"checking an attachment of {self.session_id}") as conn:
            row = conn.execute(
                f"SELECT 1 FROM attachments WHERE session_key = ({LIVE}) AND sha256 = %s",
                (self.session_id, sha256),
            ).fetchone()
        return row is not None

    def read(self, sha256: str) -> bytes:
        """The blob's bytes (``AttachmentNotFoundError`` when it is not stored)."""
        return bytes(self._column(sha256, "content", "reading"))

    def size(self, sha256: str) -> int:
        """The blob's length in bytes (from the stored value's header, not its bytes)."""
        return int(self._column(sha256, "octet_length(content)", "measuring"))

    def _column(self, sha256: str, column: str, doing: str) -> bytes | int:
        checked_hash(sha256)
        with self._db.transaction(f"{doing} an attachment of {self.session_id}") as conn:
            row = conn.execute(
                f"SELECT {column} FROM attachments WHERE session_key = ({LIVE}) AND sha256 = %s",
                (self.session_id, sha256),
            ).fetchone()
        if row is None:
            raise AttachmentNotFoundError(sha256, self.session_id)
        value: bytes | int = row[0]
        return value

    def hashes(self) -> list[str]:
        """Every stored blob's hash, sorted."""
        with self._db.transaction(f"listing the attachments of {self.session_id}") as conn:
            rows = conn.execute(
                f"SELECT sha256 FROM attachments WHERE session_key = ({LIVE})",
                (self.session_id,),
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def export(self, sha256: str, dest: Path) -> None:
        """A copy of the blob at ``dest``, replaced atomically (the database has no path)."""
        export_bytes(self.read(sha256), dest)
