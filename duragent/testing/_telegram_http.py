"""Reading a Bot API call's parameters the way Telegram does, and writing its JSON answer.

Telegram accepts parameters in the query string, as form data (python-telegram-bot's choice:
strings as they are, everything else JSON-encoded — ``reply_markup={"inline_keyboard":...}``,
``chat_id=42``, ``disable_notification=true``) or as a JSON body. The fake decodes form values
by trying JSON, except for fields that are always text, so a text "42" stays a string.

Files come as parts of a multipart/form-data body (python-telegram-bot's ``InputFile``):
each becomes a ``TelegramUpload`` under its part's name, which is the file parameter itself
(``photo``) or a name another parameter points to as ``attach://<name>``. A
``TelegramUpload`` is a dict of what the call log shows (file name, type, size) that carries
the bytes beside it, so a logged call stays plain JSON.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

__all__ = ["MAX_REQUEST_SIZE", "TelegramUpload", "read_params", "respond"]

MAX_REQUEST_SIZE = 50 * 1024 * 1024 + 64 * 1024
"""The largest request read: a 50 MB upload (Telegram's limit for bots) and its parameters."""

_TEXT_FIELDS = frozenset(
    {
        "text",
        "caption",
        "parse_mode",
        "action",
        "url",
        "callback_query_id",
        "inline_message_id",
        "secret_token",
        "ip_address",
        "language_code",
        "business_connection_id",
        "message_effect_id",
        "emoji",
        "photo",
        "document",
        "voice",
        "audio",
        "video",
        "thumbnail",
        "file_id",
    }
)


class TelegramUpload(dict[str, Any]):
    """A file uploaded in a multipart body: ``{"file_name", "mime_type", "size"}`` and ``data``.

    ``url`` is set (and shown) when the fake fetched the file from a URL the bot gave.
    """

    def __init__(self, data: bytes, file_name: str, mime_type: str, url: str | None = None):
        shown: dict[str, Any] = {"file_name": file_name, "mime_type": mime_type, "size": len(data)}
        if url is not None:
            shown["url"] = url
        super().__init__(shown)
        self.data = data
        self.file_name = file_name
        self.mime_type = mime_type
        self.url = url


def _decode(name: str, value: str) -> Any:
    if name in _TEXT_FIELDS or not value:
        return value
    if value[0] in '{["-0123456789tfn':
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


async def read_params(request: web.Request) -> dict[str, Any] | tuple[int, dict[str, Any]]:
    """The call's parameters, or a 400 answer when the body cannot be read."""
    params: dict[str, Any] = {k: _decode(k, v) for k, v in request.query.items()}
    if not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return 400, {
                "ok": False,
                "error_code": 400,
                "description": "Bad Request: the JSON body must be an object",
            }
        params.update(body)
        return params
    try:
        form = await request.post()
    except web.HTTPRequestEntityTooLarge:
        return 413, {"ok": False, "error_code": 413, "description": "Request Entity Too Large"}
    for name, value in form.items():
        if isinstance(value, str):
            params[name] = _decode(name, value)
        elif isinstance(value, web.FileField):
            params[name] = TelegramUpload(value.file.read(), value.filename, value.content_type)
    return params


def respond(status: int, body: dict[str, Any]) -> web.Response:
    """The JSON answer (compact, as Telegram's)."""
    return web.Response(
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        status=status,
        content_type="application/json",
    )
