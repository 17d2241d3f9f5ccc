"""The fake Discord's ``/_fake`` control endpoints: what users do, and what the bot did, over HTTP.

A benchmark runs the fake in a process of its own (so it does not take the serving process's
CPU, nor the load generator's), and a person reproducing a test has only curl; both drive the
fake through these endpoints, thin JSON wrappers of ``FakeDiscord`` methods. A mistake in a
request is answered 400 ``{"error": ...}`` naming the field and what it takes.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from duragent.testing.discord_objects import Person

if TYPE_CHECKING:
    from duragent.testing.fake_discord import FakeDiscord

__all__ = ["control_routes"]


def _problem(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


async def _object(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    body = json.loads(raw) if raw.strip() else {}
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


def _int(body: dict[str, Any], key: str, default: int | None = None) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key!r} must be an integer (a Discord id), got {value!r}")
    return value


def _query_int(request: web.Request, key: str) -> int | None:
    raw = request.query.get(key)
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise ValueError(f"{key!r} must be a Discord id (digits), got {raw!r}")
    return int(raw)


_ATTACHMENT_KEYS = frozenset(
    {"filename", "data_base64", "content_type", "width", "height", "description", "voice_seconds"}
)


def _attachments(fake: FakeDiscord, body: dict[str, Any]) -> list[dict[str, Any]]:
    """``attachments``: ``[{"filename", "data_base64", ...}]`` (``FakeDiscord.attachment``)."""
    found = body.get("attachments", [])
    if not isinstance(found, list) or not all(isinstance(a, dict) for a in found):
        raise ValueError("'attachments' must be a list of objects")
    made = []
    for given in found:
        unknown = sorted(set(given) - _ATTACHMENT_KEYS)
        if unknown or not isinstance(given.get("filename"), str):
            raise ValueError(f"an attachment takes {sorted(_ATTACHMENT_KEYS)} (filename needed)")
        options = {k: v for k, v in given.items() if k not in ("filename", "data_base64")}
        try:
            data = base64.b64decode(str(given.get("data_base64", "")), validate=True)
        except binascii.Error as exc:
            raise ValueError(f"'data_base64' is not base64: {exc}") from exc
        made.append(fake.attachment(data, given["filename"], **options))
    return made


def control_routes(fake: FakeDiscord) -> list[web.RouteDef]:
    """The routes of the control API of ``fake``."""

    async def info(_request: web.Request) -> web.StreamResponse:
        return web.json_response(
            {
                "url": fake.url,
                "bot": {"id": fake.bot.id, "username": fake.bot.username},
                "connected": fake.gateway.connected,
                "connected_nodes": fake.connected_nodes(),
                "identified": len(fake.gateway.identified),
            }
        )

    async def message(request: web.Request) -> web.StreamResponse:
        """A user writes: the message's id, and how many bot connections it reached.

        Body: ``{"channel_id", "content", "author_id"?, "author_name"?, "mention_bot"?,
        "attachments"?: [{"filename", "data_base64", "content_type"?, ...}]}``.
        """
        try:
            body = await _object(request)
            channel = _int(body, "channel_id")
            author = Person(_int(body, "author_id", 7), str(body.get("author_name", "user")))
            content = body.get("content")
            if not isinstance(content, str):
                raise ValueError(f"'content' must be a string, got {content!r}")
            attachments = _attachments(fake, body)
        except (TypeError, ValueError) as exc:
            return _problem(str(exc))
        mentions = [fake.bot] if body.get("mention_bot") else []
        reached = fake.gateway.connected
        sent = await fake.push_message(
            channel, content, author, mentions=mentions, attachments=attachments
        )
        return web.json_response({"id": sent["id"], "reached": reached})

    async def calls(request: web.Request) -> web.StreamResponse:
        """``?since=<index>&method=<POST…>&answers=1``: REST calls the bot made, oldest first.

        Without ``answers=1`` each call comes without Discord's answer (a whole message object
        per send): a benchmark polling every few milliseconds reads only what it needs.
        """
        try:
            since = int(request.query.get("since", "0"))
        except ValueError:
            return _problem("'since' must be a call index (an integer)")
        answers = request.query.get("answers") == "1"
        found = fake.calls(request.query.get("method"), since=since)
        return web.json_response([c.to_json(answer=answers) for c in found])

    async def downloads(request: web.Request) -> web.StreamResponse:
        """``?attachment_id=``: times one attachment (or all of them) was downloaded."""
        raw = request.query.get("attachment_id")
        try:
            count = fake.attachment_downloads(raw)
        except (LookupError, ValueError) as exc:
            return _problem(str(exc))
        return web.json_response({"attachment_id": raw, "downloads": count})

    async def sent_files(request: web.Request) -> web.StreamResponse:
        """``?channel_id=&data=0``: the bot's files, bytes as ``data_base64`` unless ``data=0``."""
        try:
            channel = _query_int(request, "channel_id")
        except ValueError as exc:
            return _problem(str(exc))
        data = request.query.get("data") != "0"
        return web.json_response([f.to_json(data=data) for f in fake.sent_files(channel)])

    async def edits(request: web.Request) -> web.StreamResponse:
        """``?channel_id=&message_id=``: the bot's accepted edits (request bodies), in order."""
        try:
            channel = _query_int(request, "channel_id")
            message_id = _query_int(request, "message_id")
        except ValueError as exc:
            return _problem(str(exc))
        if channel is None:
            return _problem("edits needs ?channel_id=")
        return web.json_response(fake.edits(channel, message_id))

    async def messages_now(request: web.Request) -> web.StreamResponse:
        """``?channel_id=``: the bot's messages as they read now, and the ids it deleted."""
        try:
            channel = _query_int(request, "channel_id")
        except ValueError as exc:
            return _problem(str(exc))
        if channel is None:
            return _problem("final_texts needs ?channel_id=")
        return web.json_response(
            {"texts": fake.final_texts(channel), "deleted": fake.deleted(channel)}
        )

    async def rate_limit(request: web.Request) -> web.StreamResponse:
        """``{"method", "path", "retry_after": [seconds, ...]}``: the next calls answered 429."""
        try:
            body = await _object(request)
            method, path, waits = body.get("method"), body.get("path"), body.get("retry_after")
            if not isinstance(method, str) or not isinstance(path, str):
                raise ValueError("'method' and 'path' (under /api/v10) must be strings")
            if not isinstance(waits, list) or not all(isinstance(w, int | float) for w in waits):
                raise ValueError("'retry_after' must be a list of seconds")
        except ValueError as exc:
            return _problem(str(exc))
        fake.rate_limit(method, path, *waits)
        return web.json_response({"method": method, "path": path, "retry_after": waits})

    async def fault(request: web.Request) -> web.StreamResponse:
        """``{"method", "path", "kind": "server_error"|"drop"|"drop_after", "status", "times"}``."""
        try:
            body = await _object(request)
            method, path, kind = body.get("method"), body.get("path"), body.get("kind")
            status, times = body.get("status", 502), body.get("times", 1)
            if not isinstance(method, str) or not isinstance(path, str):
                raise ValueError("'method' and 'path' (under /api/v10) must be strings")
            if not isinstance(status, int) or not isinstance(times, int) or times < 1:
                raise ValueError("'status' and 'times' must be integers, 'times' at least 1")
            if kind == "server_error":
                fake.fail(method, path, status, times)
            elif kind in ("drop", "drop_after"):
                fake.drop(method, path, after_applying=kind == "drop_after", times=times)
            else:
                raise ValueError("'kind' must be server_error, drop or drop_after")
        except ValueError as exc:
            return _problem(str(exc))
        return web.json_response({"method": method, "path": path, "kind": kind, "times": times})

    return [
        web.get("/_fake/info", info),
        web.post("/_fake/fault", fault),
        web.post("/_fake/message", message),
        web.get("/_fake/calls", calls),
        web.get("/_fake/downloads", downloads),
        web.get("/_fake/sent_files", sent_files),
        web.get("/_fake/edits", edits),
        web.get("/_fake/final_texts", messages_now),
        web.post("/_fake/rate_limit", rate_limit),
    ]
