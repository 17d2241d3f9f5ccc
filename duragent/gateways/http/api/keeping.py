"""A message's uploads kept in its session before the message is submitted.

What ``frontkit``'s media intake does for a chat's files, for the HTTP API's (which arrive
whole in the request: nothing to download, and the client is told in the answer):

1. **Read** an image's pixels and type from its header (Pillow reads no more): the bytes say
   what they are better than a client's ``mime``; the pixels let the model's budget count
   the image. Bytes that are no image Pillow reads are kept as sent, without pixels.
2. **Keep** the bytes in the session (``TurnRunner.attachments.keep``: content-addressed,
   fsync'd, idempotent, so a request sent again with its ``Idempotency-Key`` writes nothing
   new).
3. **Documents** are copied to the session's files folder in the agent's folder
   (``agents.chat_files``), where its tools read them and where the model is told they are;
   written atomically, skipped when there.

A voice note or audio sent over HTTP is not transcribed here (a chat's are, by the intake).
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Sequence

from duragent.agents.chat_files import chat_file, chat_files_dir
from duragent.core.attachments import Attachment, AttachmentKind
from duragent.errors import AgentNotFoundError
from duragent.gateways.http.api.uploads import Upload
from duragent.gateways.http.services import HttpServices
from duragent.llm.images import FORMATS
from duragent.turns import SessionNotFoundError

__all__ = ["image_header", "keep_uploads"]

log = logging.getLogger(__name__)


def image_header(data: bytes) -> tuple[int | None, int | None, str | None]:
    """An image's width, height and type from its header (Nones: not one Pillow reads)."""
    from PIL import Image  # a main dependency; loaded with the first image

    try:
        with Image.open(io.BytesIO(data), formats=FORMATS) as image:
            width, height = image.size
            mime = image.get_format_mimetype()
    except Exception:  # not an image, or one Pillow refuses: kept without its pixels
        return None, None, None
    return int(width), int(height), mime


async def keep_uploads(
    services: HttpServices, session_id: str, uploads: Sequence[Upload]
) -> tuple[Attachment, ...]:
    """Store the uploads in the session, in order, and describe them for its message.

    A session that is not live (never created, deleted, quarantined) stores nothing: its
    state is asked for so the answer is the one a message alone would get (404, or 409 for a
    quarantined one).
    """
    turns = services.turns
    kept: list[Attachment] = []
    for item in uploads:
        width = height = seen = None
        if item.kind is AttachmentKind.IMAGE:
            width, height, seen = await asyncio.to_thread(image_header, item.data)
        try:
            attachment = await turns.attachments.keep(
                session_id,
                item.data,
                kind=item.kind,
                mime=seen or item.mime,
                name=item.name,
                width=width,
                height=height,
            )
        except (FileNotFoundError, ValueError):
            await turns.sessions.info(session_id)  # raises what the session's state is
            raise SessionNotFoundError(session_id) from None
        kept.append(attachment)
    documents = [a for a in kept if a.kind is AttachmentKind.DOCUMENT]
    if documents:
        await _save_for_tools(services, session_id, documents)
    return tuple(kept)


async def _save_for_tools(
    services: HttpServices, session_id: str, documents: Sequence[Attachment]
) -> None:
    """Copy the documents where the session's agent's tools read them (atomically; once)."""
    agent = (await services.turns.sessions.info(session_id)).agent
    try:
        folder = chat_files_dir(services.catalog.get(agent).directory, session_id)
    except AgentNotFoundError:  # its agent is gone: the message is refused by the turn
        log.info(
            "session %s: agent %s is not loaded; its documents are not copied", session_id, agent
        )
        return
    for document in documents:
        dest = folder / chat_file(document)
        if await asyncio.to_thread(dest.is_file):
            continue
        await asyncio.to_thread(dest.parent.mkdir, parents=True, exist_ok=True)
        await services.turns.attachments.export(session_id, document.sha256, dest)
