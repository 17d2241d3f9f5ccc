"""A message's attachments going out: their description with a download path, and the bytes.

History (``GET …/messages``), the console and the stream's ``start`` event describe each
attachment as its ``user_message`` event records it (kind, mime, size, sha256, name,
transcript, pixels) plus ``url``: the path of ``GET /api/v1/sessions/{id}/attachments/{sha256}``,
which answers its bytes under the API's own authentication. The files the agent sent with a
reply (``send_file``) are described the same way, plus their ``caption``, as its
``assistant_response`` records them: HTTP has no chat to push a file to, so the reply (JSON,
the stream's ``done``, history) carries the link to it.

The download is served so a browser never runs or renders it as a page of this origin: a
file is always ``Content-Disposition: attachment`` (with a file name stripped of anything a
header or a file system could misread), ``X-Content-Type-Options: nosniff`` and a
``sandbox`` Content-Security-Policy. Its ``Content-Type`` is the one recorded (a media type
without parameters: ``uploads`` keeps no more). An attachment is found by its hash among
the messages of the session (archive included): bytes kept for a message that was never
recorded (a refused or failed request) are not served, nor are another session's; a reply's
files are found the same way, by the ``assistant_response`` that names them (the bytes
``send_file`` kept for a reply never recorded are not served).
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from duragent.core.attachments import Attachment, is_content_hash
from duragent.core.events import Event
from duragent.core.payloads import AssistantResponseData, EventType, UserMessageData
from duragent.gateways.http.server.problem import ProblemError
from duragent.tools.send_file import ReplyFile
from duragent.turns import AttachmentNotFoundError, TurnRunner

__all__ = [
    "DOWNLOAD_HEADERS",
    "attachment_url",
    "attachment_views",
    "download",
    "reply_file_views",
    "safe_filename",
    "with_attachment_urls",
]

DOWNLOAD_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox; default-src 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
"""Sent with every attachment's bytes (see the module docstring for why)."""

_UNSAFE_ASCII = re.compile(r"[^A-Za-z0-9._ ()+,=@\[\]-]")
_MAX_FILENAME = 150
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")
"""A recorded type served as it is; anything else (a hand-edited event) as plain bytes."""


def attachment_url(session_id: str, sha256: str) -> str:
    """The path of one attachment's bytes (``GET``, the API's bearer token)."""
    return f"/api/v1/sessions/{quote(session_id, safe='')}/attachments/{sha256}"


def attachment_views(session_id: str, attachments: Iterable[Attachment]) -> list[dict[str, Any]]:
    """Attachments as the API shows them: their recorded fields and ``url``."""
    return [a.to_data() | {"url": attachment_url(session_id, a.sha256)} for a in attachments]


def reply_file_views(session_id: str, files: Iterable[ReplyFile]) -> list[dict[str, Any]]:
    """A reply's files as the API shows them: as recorded (``caption`` too) and ``url``.

    The same shape as history's records of them, so a client reads a reply and a listed
    message alike.
    """
    return [f.to_data() | {"url": attachment_url(session_id, f.attachment.sha256)} for f in files]


def with_attachment_urls(session_id: str, messages: Sequence[dict[str, Any]]) -> None:
    """Give each attachment of the history's messages its ``url`` (in place)."""
    for message in messages:
        for item in message.get("attachments") or ():
            if isinstance(item, dict) and isinstance(item.get("sha256"), str):
                item["url"] = attachment_url(session_id, item["sha256"])


def safe_filename(attachment: Attachment) -> str:
    """The ``Content-Disposition`` value: ASCII ``filename`` plus UTF-8 ``filename*``.

    No quote, backslash, control character or path separator reaches the header; a nameless
    attachment (a photo, a voice note) is named by its kind, hash and type's extension.
    """
    name = attachment.name
    if not name:
        extension = mimetypes.guess_extension(attachment.mime) or ""
        name = f"{attachment.kind.value}-{attachment.sha256[:12]}{extension}"
    name = "".join(c for c in name if c.isprintable() and c not in '/\\"')[-_MAX_FILENAME:]
    name = name.strip(" .") or attachment.sha256[:12]
    ascii_name = _UNSAFE_ASCII.sub("_", name)
    encoded = quote(name, safe="")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{encoded}"


def _named(event: Event) -> Iterable[Attachment]:
    """The attachments one event names: a user's message's, or the files of a reply."""
    if event.type == EventType.USER_MESSAGE:
        return UserMessageData.of(event.data).attachments
    if event.type == EventType.ASSISTANT_RESPONSE:
        files = ReplyFile.files_of(AssistantResponseData.of(event.data).attachments)
        return (f.attachment for f in files)
    return ()


def _recorded(events: Sequence[Event], sha256: str) -> Attachment | None:
    """The newest record of the attachment with this hash among the session's messages."""
    for event in reversed(events):
        for attachment in _named(event):
            if attachment.sha256 == sha256:
                return attachment
    return None


async def download(turns: TurnRunner, session_id: str, sha256: str) -> Response:
    """``GET /api/v1/sessions/{id}/attachments/{sha256}``: the bytes, or a 404 problem."""
    missing = ProblemError(
        404,
        f"session {session_id} has no attachment {sha256[:64]}",
        extra={"fix": "take the url from the message's attachments in GET …/messages"},
    )
    if not is_content_hash(sha256):
        raise missing
    events = await turns.sessions.events(session_id, include_archive=True)
    found = _recorded(events, sha256)
    if found is None:
        raise missing
    try:
        data = await turns.attachments.read(session_id, sha256)
    except (AttachmentNotFoundError, FileNotFoundError, ValueError):
        raise missing from None
    headers = DOWNLOAD_HEADERS | {"Content-Disposition": safe_filename(found)}
    mime = found.mime if _MEDIA_TYPE.fullmatch(found.mime) else "application/octet-stream"
    return Response(data, media_type=mime, headers=headers)
