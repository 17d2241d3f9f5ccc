"""The files ``send_file`` kept for each session's next reply, until that reply takes them.

The tool keeps the bytes in the session's attachments (``AttachmentStorage.put``: durable
before the tool's result is) and leaves a ``ReplyFile`` here; the loop hands what waits to
the next final reply it records (``loop.run_loop``), whose ``assistant_response`` names them.
Kept per session, not per turn: a turn paused for an approval goes on in a new loop context,
and its reply still carries the files sent before the pause. A turn that fails leaves them
for the session's next reply (the model was told they go with its reply).

In memory only: a crash between the tool's call and the reply loses the waiting list (the
bytes stay, unnamed, as a photo kept before its message was recorded does); the turn is run
again after the restart and the model may send the file again. Once the reply is recorded,
its files are as durable as it is.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable

from duragent.core.attachments import Attachment, AttachmentKind
from duragent.store import AttachmentStorage
from duragent.tools.send_file import ReplyFile

__all__ = ["ReplyShelf", "SessionReplyFiles"]

KEPT_SESSIONS = 10_000
"""Sessions with files waiting that are remembered (the oldest are forgotten first)."""


class ReplyShelf:
    """Every session's waiting files (see module docstring); one per turn runner."""

    def __init__(self, storage: Callable[[str], AttachmentStorage]) -> None:
        self._storage = storage
        self._waiting: OrderedDict[str, list[ReplyFile]] = OrderedDict()

    def for_session(self, session_id: str) -> SessionReplyFiles:
        """The ``ReplyFiles`` port of one session (for its ``send_file`` and its loop)."""
        return SessionReplyFiles(self, session_id)

    def waiting(self, session_id: str) -> tuple[ReplyFile, ...]:
        """The session's waiting files."""
        return tuple(self._waiting.get(session_id, ()))

    def add(self, session_id: str, file: ReplyFile) -> bool:
        """Wait for the session's reply with ``file``; False when those bytes wait already."""
        files = self._waiting.pop(session_id, None) or []
        self._waiting[session_id] = files
        while len(self._waiting) > KEPT_SESSIONS:
            self._waiting.popitem(last=False)
        if any(f.attachment.sha256 == file.attachment.sha256 for f in files):
            return False
        files.append(file)
        return True

    def take(self, session_id: str) -> tuple[ReplyFile, ...]:
        """The session's waiting files, none waiting afterwards."""
        return tuple(self._waiting.pop(session_id, ()))

    def storage(self, session_id: str) -> AttachmentStorage:
        """The session's attachments, where the bytes are kept."""
        return self._storage(session_id)


class SessionReplyFiles:
    """One session's ``tools.send_file.ReplyFiles`` over the shelf."""

    __slots__ = ("_session_id", "_shelf")

    def __init__(self, shelf: ReplyShelf, session_id: str) -> None:
        self._shelf = shelf
        self._session_id = session_id

    async def attach(
        self, data: bytes, *, kind: AttachmentKind, mime: str, name: str, caption: str | None
    ) -> ReplyFile | None:
        """Keep ``data`` (off the loop, durably) and wait for the reply with it."""
        storage = self._shelf.storage(self._session_id)
        sha256 = await asyncio.to_thread(storage.put, data)
        attachment = Attachment(kind=kind, mime=mime, size=len(data), sha256=sha256, name=name)
        file = ReplyFile(attachment, caption)
        return file if self._shelf.add(self._session_id, file) else None

    def waiting(self) -> int:
        """How many files wait for the reply."""
        return len(self._shelf.waiting(self._session_id))

    def take(self) -> tuple[ReplyFile, ...]:
        """The waiting files, now the reply's."""
        return self._shelf.take(self._session_id)
