"""``SessionAttachments``: the bytes a message carries, kept before the message is recorded.

A front end that receives a photo, a voice note or a file downloads it, keeps it here (in the
session's ``AttachmentStorage``: content-addressed, fsync'd, idempotent), and only then
submits the message with the ``Attachment`` values this returns (``Incoming.attachments``,
``Inbound.attachments``). The message's ``user_message`` event names them; the session refuses
to name a blob it does not have, so an event never points at nothing. A crash between keeping
and recording leaves an unnamed blob (the platform delivers the update again; keeping the same
bytes again writes nothing).

Front ends never import ``duragent.session`` or ``duragent.store``: they reach a session's
attachments through ``TurnRunner.attachments`` (this port), and read them back the same way
(the HTTP API's download, a tool's copy).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from duragent.core.attachments import Attachment, AttachmentKind
from duragent.session import SessionRegistry

__all__ = ["SessionAttachments"]


class SessionAttachments:
    """Keep and read a session's attachments (see module docstring)."""

    __slots__ = ("_registry",)

    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry

    async def keep(
        self,
        session_id: str,
        data: bytes,
        *,
        kind: AttachmentKind,
        mime: str,
        name: str | None = None,
        platform_id: str | None = None,
        transcript: str | None = None,
        width: int | None = None,
        height: int | None = None,
        then: Callable[[Attachment], Attachment] | None = None,
    ) -> Attachment:
        """Store ``data`` durably for ``session_id`` and describe it (off the event loop).

        ``then``, when given, is called in the same worker thread with that description once
        the bytes are kept, and what it returns is returned: a front end's own work on the
        bytes (the media intake reads an image's header and notes the platform file) in one
        thread hop, not one each (a hop costs ~0.1 ms of CPU and two context switches).

        Raises ``FileNotFoundError`` when the session is not live (never created, deleted,
        set aside), what the store raises on a failed write (``OSError``), and what ``then``
        raises.
        """
        storage = self._registry.store.attachments(session_id)

        def store() -> Attachment:
            attachment = Attachment(
                kind=kind,
                mime=mime,
                size=len(data),
                sha256=storage.put(data),
                name=name,
                platform_id=platform_id,
                transcript=transcript,
                width=width,
                height=height,
            )
            return then(attachment) if then is not None else attachment

        return await asyncio.to_thread(store)

    async def read(self, session_id: str, sha256: str) -> bytes:
        """The bytes of one attachment (``AttachmentNotFoundError`` when there is none)."""
        storage = self._registry.store.attachments(session_id)
        return await asyncio.to_thread(storage.read, sha256)

    async def has(self, session_id: str, sha256: str) -> bool:
        """Whether the session holds these bytes (a redelivered update needs no download)."""
        storage = self._registry.store.attachments(session_id)
        return await asyncio.to_thread(storage.has, sha256)

    async def export(self, session_id: str, sha256: str, dest: Path) -> None:
        """Write a copy of one attachment to ``dest`` (replaced atomically): a tool's copy."""
        storage = self._registry.store.attachments(session_id)
        await asyncio.to_thread(storage.export, sha256, dest)
