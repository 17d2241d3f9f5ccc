"""Files the bot attaches to its messages on the fake Discord, and how its requests are read.

discord.py sends a message with files (``channel.send(file=discord.File(...))``, or
``message.edit(attachments=[...])``) as multipart/form-data: a ``payload_json`` part holding
the JSON body, whose ``attachments`` list names each file by its index (``{"id": 0,
"filename": "chart.png", "description"?}``), and one ``files[n]`` part per file. On an edit
the same list keeps the message's earlier attachments by their snowflake ids; the ones left
out are removed. ``read_body`` reads either form; ``BotUploads`` turns the uploaded parts into
attachment objects served by the fake's CDN (so the bot, or a test, can download them back),
with Discord's checks (at most 10 files, ``upload_limit`` bytes in all: 413 "Request entity
too large", code 40005), and records each file as a ``SentAttachment``: its bytes, name,
type, the message it went out with, and whether that was a send or an edit.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from duragent.testing._discord_files import DiscordCdn

__all__ = [
    "DEFAULT_UPLOAD_LIMIT",
    "BotUploads",
    "RestBody",
    "SentAttachment",
    "UploadedPart",
    "edit_timestamp",
    "rate_limit_headers",
    "read_body",
]

DEFAULT_UPLOAD_LIMIT = 10 * 1024 * 1024
"""Bytes of files one message may carry (Discord's limit without a boosted server)."""
MAX_FILES = 10
Answer = tuple[int, Any]
TOO_LARGE: Answer = (413, {"message": "Request entity too large", "code": 40005})


@dataclass(frozen=True)
class UploadedPart:
    """One ``files[n]`` part of a request."""

    index: int
    filename: str
    data: bytes


@dataclass(frozen=True)
class RestBody:
    """A REST request as read: its JSON body (``payload_json``'s) and its uploaded files."""

    body: dict[str, Any]
    files: list[UploadedPart]


@dataclass(frozen=True)
class SentAttachment:
    """One file the bot attached to a message, as the channel received it."""

    channel_id: int
    message_id: int
    attachment_id: int
    filename: str
    data: bytes
    content_type: str | None
    description: str | None
    content: str
    """The message's text when the file went out."""
    via: Literal["send", "edit"] = "send"

    def to_json(self, *, data: bool = True) -> dict[str, Any]:
        """Plain JSON (``GET /_fake/sent_files``), the bytes as ``data_base64`` if asked."""
        found: dict[str, Any] = {
            "channel_id": self.channel_id,
            "message_id": self.message_id,
            "attachment_id": self.attachment_id,
            "filename": self.filename,
            "size": len(self.data),
            "content_type": self.content_type,
            "description": self.description,
            "content": self.content,
            "via": self.via,
        }
        if data:
            found["data_base64"] = base64.b64encode(self.data).decode()
        return found


async def read_body(request: web.Request) -> RestBody | Answer:
    """A REST request's JSON body and uploaded files (multipart or plain JSON), or a 4xx."""
    if not request.can_read_body:
        return RestBody({}, [])
    if not request.content_type.startswith("multipart/"):
        body: Any = {}
        with contextlib.suppress(ValueError):
            body = await request.json()
        return RestBody(body if isinstance(body, dict) else {}, [])
    try:
        form = await request.post()
    except web.HTTPRequestEntityTooLarge:
        return TOO_LARGE
    payload: Any = {}
    parts: list[UploadedPart] = []
    for name, value in form.items():
        if name == "payload_json":
            raw = value.file.read() if isinstance(value, web.FileField) else value
            try:
                payload = json.loads(raw)
            except ValueError:
                return 400, {"message": "Invalid Form Body", "code": 50035}
        elif isinstance(value, web.FileField) and name.startswith("files["):
            index = name.removeprefix("files[").removesuffix("]")
            if not index.isdigit():
                return 400, {"message": "Invalid Form Body", "code": 50035}
            parts.append(UploadedPart(int(index), value.filename, value.file.read()))
    return RestBody(payload if isinstance(payload, dict) else {}, parts)


class BotUploads:
    """The bot's files: attachment objects for its messages, and their records."""

    def __init__(self, cdn: DiscordCdn, upload_limit: int = DEFAULT_UPLOAD_LIMIT) -> None:
        self.cdn = cdn
        self.upload_limit = upload_limit
        self.sent: list[SentAttachment] = []

    def attachments(
        self,
        base_url: str,
        ids: Iterator[int],
        body: dict[str, Any],
        parts: list[UploadedPart],
        kept: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]] | Answer:
        """A message's attachments after this request, or the error answer.

        ``kept``: the message's attachments before an edit (``None`` for a new message). The
        body's ``attachments`` list orders them: an entry whose ``id`` is an index of
        ``parts`` is a new file, one whose ``id`` is an earlier attachment's keeps it; without
        the list every part is attached, after the ones kept.
        """
        if len(parts) > MAX_FILES:
            return 400, {"message": "Invalid Form Body", "code": 50035}
        if sum(len(p.data) for p in parts) > self.upload_limit:
            return TOO_LARGE
        by_index = {p.index: p for p in parts}
        earlier = {str(a["id"]): a for a in kept or []}
        listed = body.get("attachments")
        if not isinstance(listed, list):
            listed = [{"id": p.index} for p in parts]
            found: list[dict[str, Any]] = list(kept or [])
        else:
            found = []
        for entry in listed:
            if not isinstance(entry, dict):
                return 400, {"message": "Invalid Form Body", "code": 50035}
            key = str(entry.get("id"))
            if key in earlier:
                found.append(earlier[key])
                continue
            part = by_index.get(int(key)) if key.isdigit() else None
            if part is None:
                return 400, {"message": "Invalid Form Body", "code": 50035}
            filename = str(entry.get("filename") or part.filename)
            description = entry.get("description")
            found.append(
                self.cdn.attachment(
                    base_url,
                    next(ids),
                    part.data,
                    filename,
                    description=description if isinstance(description, str) else None,
                )
            )
        return found

    def edit(
        self,
        edited: dict[str, Any],
        body: dict[str, Any],
        files: list[UploadedPart],
        base_url: str,
        ids: Iterator[int],
    ) -> Answer:
        """Apply an edit to a kept message: content, components, attachments kept or added."""
        if len(str(body.get("content") or "")) > 2000:
            return 400, {"message": "Invalid Form Body", "code": 50035}
        before = list(edited["attachments"])
        if files or "attachments" in body:
            attachments = self.attachments(base_url, ids, body, files, before)
            if isinstance(attachments, tuple):
                return attachments
            edited["attachments"] = attachments
        if "content" in body:
            edited["content"] = body["content"] or ""
        if "components" in body:
            edited["components"] = body["components"] or []
        edited["edited_timestamp"] = edit_timestamp()
        self.record(edited, before, "edit")
        return 200, edited

    def record(
        self,
        message: dict[str, Any],
        before: list[dict[str, Any]],
        via: Literal["send", "edit"],
    ) -> None:
        """Record the message's attachments that were not among ``before``."""
        old = {str(a["id"]) for a in before}
        for attachment in message.get("attachments", []):
            if str(attachment["id"]) in old:
                continue
            stored = self.cdn.file(int(attachment["id"]))
            self.sent.append(
                SentAttachment(
                    int(message["channel_id"]),
                    int(message["id"]),
                    stored.attachment_id,
                    stored.filename,
                    stored.data,
                    stored.content_type,
                    attachment.get("description"),
                    str(message.get("content", "")),
                    via,
                )
            )

    def of(self, where: Callable[[SentAttachment], bool]) -> list[SentAttachment]:
        """The records ``where`` accepts, in order."""
        return [s for s in self.sent if where(s)]


def edit_timestamp() -> str:
    """An edited message's ``edited_timestamp``: now, ISO 8601 with microseconds, as Discord's."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}+00:00"


def rate_limit_headers(retry_after: float, path: str) -> dict[str, str]:
    """What Discord sends with a 429 beside the JSON body (discord.py waits the body's value)."""
    return {
        "Via": "1.1 google",  # discord.py: a rate limit, not a Cloudflare ban
        "Retry-After": str(math.ceil(retry_after)),
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{time.time() + retry_after:.3f}",
        "X-RateLimit-Reset-After": f"{retry_after:.3f}",
        "X-RateLimit-Bucket": f"fake-{abs(hash(path.rsplit('/', 1)[0])):x}",
        "X-RateLimit-Scope": "user",
    }
