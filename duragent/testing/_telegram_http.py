"""Reading a Bot API call's parameters the way Telegram does, and writing its JSON answer.

Telegram accepts parameters in the query string, as form data (python-telegram-bot's choice:
strings as they are, everything else JSON-encoded — ``reply_markup={"inline_keyboard":...}``,
``chat_id=42``, ``disable_notification=true``) or as a JSON body. The fake decodes form values
by trying JSON, except for fields that are always text, so a text "42" stays a string.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

__all__ = ["read_params", "respond"]

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
    }
)


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
    form = await request.post()
    for name, value in form.items():
        if isinstance(value, str):  # uploaded files are not looked at
            params[name] = _decode(name, value)
    return params


def respond(status: int, body: dict[str, Any]) -> web.Response:
    """The JSON answer (compact, as Telegram's)."""
    return web.Response(
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        status=status,
        content_type="application/json",
    )
