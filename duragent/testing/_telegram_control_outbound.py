"""The fake Telegram's ``/_fake`` endpoints for what the bot sent back and changed.

A crash test reads, from its own process, the files the bot sent, its edits, drafts and
deletions, the messages as they read now and the command menus; these are thin JSON wrappers
of ``FakeTelegram``'s methods (``_telegram_outbound``). Query parameters filter, as the
methods' arguments do; a mistake is answered 400 ``{"error": ...}``.

- ``GET /_fake/sent_files?chat_id=&kind=&data=0``: ``[SentFile.to_json()]``, the bytes as
  ``data_base64`` unless ``data=0``;
- ``GET /_fake/edits?chat_id=&message_id=``, ``/_fake/drafts?chat_id=&draft_id=``,
  ``/_fake/deleted?chat_id=``: the records in order;
- ``GET /_fake/final_texts?chat_id=``: ``{"texts": [...]}`` (edits applied, deletions gone);
- ``GET /_fake/message_now?chat_id=&message_id=``: ``{"text", "message"}`` (404 if none);
- ``GET /_fake/commands?scope=<JSON>&language_code=``: ``{"commands", "menus"}``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from aiohttp import web

from duragent.testing._telegram_media import MEDIA_KINDS, MediaKind

if TYPE_CHECKING:
    from duragent.testing.fake_telegram import FakeTelegram

__all__ = ["outbound_routes"]


def _problem(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


def _chat(query: Any) -> int | str | None:
    raw = query.get("chat_id")
    if raw is None or raw == "":
        return None
    return int(raw) if raw.lstrip("-").isdigit() else str(raw)


def _number(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if not raw.lstrip("-").isdigit():
        raise ValueError(f"{name} must be an integer, not {raw!r}")
    return int(raw)


def outbound_routes(fake: FakeTelegram) -> list[web.RouteDef]:
    """The routes reading ``fake``'s outbound records."""

    async def sent_files(request: web.Request) -> web.StreamResponse:
        kind = request.query.get("kind") or None
        if kind is not None and kind not in MEDIA_KINDS:
            return _problem(f"kind must be one of {', '.join(MEDIA_KINDS)}, not {kind!r}")
        found = fake.sent_files(_chat(request.query), cast(MediaKind | None, kind))
        data = request.query.get("data") != "0"
        return web.json_response([f.to_json(data=data) for f in found])

    async def edits(request: web.Request) -> web.StreamResponse:
        try:
            message_id = _number(request.query, "message_id")
        except ValueError as exc:
            return _problem(str(exc))
        found = fake.edits(_chat(request.query), message_id)
        return web.json_response([e.to_json() for e in found])

    async def drafts(request: web.Request) -> web.StreamResponse:
        try:
            draft_id = _number(request.query, "draft_id")
        except ValueError as exc:
            return _problem(str(exc))
        found = fake.drafts(_chat(request.query), draft_id)
        return web.json_response([d.to_json() for d in found])

    async def deleted(request: web.Request) -> web.StreamResponse:
        return web.json_response([d.to_json() for d in fake.deleted(_chat(request.query))])

    async def final_texts(request: web.Request) -> web.StreamResponse:
        chat_id = _chat(request.query)
        if chat_id is None:
            return _problem("final_texts needs ?chat_id=")
        return web.json_response({"chat_id": chat_id, "texts": fake.final_texts(chat_id)})

    async def message_now(request: web.Request) -> web.StreamResponse:
        chat_id = _chat(request.query)
        try:
            message_id = _number(request.query, "message_id")
        except ValueError as exc:
            return _problem(str(exc))
        if chat_id is None or message_id is None:
            return _problem("message_now needs ?chat_id=&message_id=")
        found = fake.message(chat_id, message_id)
        if found is None:
            return web.json_response({"error": "no such message"}, status=404)
        text = fake.message_text(chat_id, message_id)
        return web.json_response({"text": text, "message": found})

    async def commands(request: web.Request) -> web.StreamResponse:
        raw = request.query.get("scope")
        try:
            scope = json.loads(raw) if raw else None
        except ValueError as exc:
            return _problem(f"scope must be a JSON object: {exc}")
        if scope is not None and not isinstance(scope, dict):
            return _problem('scope must be a JSON object, such as {"type": "default"}')
        language = request.query.get("language_code", "")
        return web.json_response(
            {"commands": fake.commands(scope, language), "menus": fake.command_menus()}
        )

    return [
        web.get("/_fake/sent_files", sent_files),
        web.get("/_fake/edits", edits),
        web.get("/_fake/drafts", drafts),
        web.get("/_fake/deleted", deleted),
        web.get("/_fake/final_texts", final_texts),
        web.get("/_fake/message_now", message_now),
        web.get("/_fake/commands", commands),
    ]
