"""The fake Telegram's ``/_fake`` control endpoints: its test API, over HTTP.

A restart campaign SIGKILLs the bot process while the fake runs on in a process of its own,
and a person reproducing a test by hand has only curl; both drive the fake through these
endpoints. Each one is a thin JSON wrapper of a ``FakeTelegram`` method (the module docstring
of ``fake_telegram`` lists them); a mistake in a request is answered 400 ``{"error": ...}``
naming what was wrong.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from duragent.testing._telegram_control_outbound import outbound_routes
from duragent.testing.telegram_faults import FaultRule

if TYPE_CHECKING:
    from duragent.testing.fake_telegram import FakeTelegram

__all__ = ["control_routes"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status)


def _problem(message: str) -> web.Response:
    return _json({"error": message}, 400)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    return json.loads(raw) if raw.strip() else {}


def _pusher(push: Callable[..., dict[str, Any]]) -> Handler:
    """An endpoint calling ``push(**body)``; the body's keys are the method's arguments."""
    accepted = sorted(inspect.signature(push).parameters)

    async def endpoint(request: web.Request) -> web.StreamResponse:
        try:
            body = await _body(request)
        except ValueError as exc:
            return _problem(f"the body is not JSON: {exc}")
        if not isinstance(body, dict):
            return _problem(f"the body must be a JSON object with keys among {accepted}")
        unknown = sorted(set(body) - set(accepted))
        if unknown:
            return _problem(f"unknown key(s) {unknown}; accepted: {accepted}")
        try:
            return _json(push(**body))
        except (TypeError, ValueError, LookupError) as exc:
            return _problem(str(exc))

    return endpoint


def _media_pusher(push: Callable[..., dict[str, Any]]) -> Handler:
    """``push_media`` over HTTP: the bytes travel as ``data_base64``."""
    accepted = sorted({*inspect.signature(push).parameters, "data_base64"} - {"data"})

    async def endpoint(request: web.Request) -> web.StreamResponse:
        try:
            body = await _body(request)
        except ValueError as exc:
            return _problem(f"the body is not JSON: {exc}")
        if not isinstance(body, dict) or not isinstance(body.get("data_base64"), str):
            return _problem(f'expected {{"chat_id", "kind", "data_base64", ...}}; keys: {accepted}')
        unknown = sorted(set(body) - set(accepted))
        if unknown:
            return _problem(f"unknown key(s) {unknown}; accepted: {accepted}")
        try:
            data = base64.b64decode(body.pop("data_base64"), validate=True)
        except (binascii.Error, ValueError) as exc:
            return _problem(f"data_base64 is not base64: {exc}")
        try:
            return _json(push(data=data, **body))
        except (TypeError, ValueError, LookupError) as exc:
            return _problem(str(exc))

    return endpoint


def control_routes(fake: FakeTelegram) -> list[web.RouteDef]:
    """The routes of the control API of ``fake``."""

    async def info(_request: web.Request) -> web.StreamResponse:
        return _json(
            {
                "url": fake.url,
                "base_url": fake.base_url,
                "token": fake.token,
                "bot": fake.bot,
                "calls": len(fake.calls()),
                "pending_updates": len(fake.pending_updates()),
            }
        )

    async def push_update(request: web.Request) -> web.StreamResponse:
        body = await _body(request)
        if not isinstance(body, dict) or not isinstance(body.get("payload"), dict):
            return _problem('expected {"kind": "message", "payload": {...}}')
        return _json(fake.push_update(str(body.get("kind", "message")), body["payload"]))

    async def updates(_request: web.Request) -> web.StreamResponse:
        return _json({"pending": fake.pending_updates()})

    async def calls(request: web.Request) -> web.StreamResponse:
        query = request.query
        try:
            since = int(query.get("since", "0"))
        except ValueError:
            return _problem("since must be a call index (an integer)")
        found = fake.calls(query.get("method"), since=since, chat_id=query.get("chat_id"))
        if query.get("answers") == "0":  # a load generator's poll: the calls without answers
            return _json([{**c.to_json(), "answer": None} for c in found])
        return _json([c.to_json() for c in found])

    async def sent(request: web.Request) -> web.StreamResponse:
        return _json({"texts": fake.sent_messages(request.query.get("chat_id"))})

    async def send_times(request: web.Request) -> web.StreamResponse:
        chat_id = request.query.get("chat_id")
        if chat_id is None:
            return _problem("send_times needs ?chat_id=")
        key: int | str = int(chat_id) if chat_id.lstrip("-").isdigit() else chat_id
        return _json({"chat_id": key, "times": fake.send_times(key)})

    async def downloads(request: web.Request) -> web.StreamResponse:
        file_id, node = request.query.get("file_id"), request.query.get("node")
        try:
            count = fake.downloads(file_id, node=node)
        except LookupError as exc:
            return _problem(str(exc))
        found = {"file_id": file_id, "downloads": count}
        return _json(found if node is None else {**found, "node": node})

    async def early_retries(_request: web.Request) -> web.StreamResponse:
        found = fake.early_retries()
        return _json(
            [
                {
                    "limited": e.limited.to_json(),
                    "early": e.early.to_json(),
                    "too_early_by": e.too_early_by,
                }
                for e in found
            ]
        )

    async def faults(request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            try:
                body = await _body(request)
                rules = [
                    FaultRule.from_json(r) for r in (body if isinstance(body, list) else [body])
                ]
            except ValueError as exc:
                return _problem(str(exc))
            fake.add_fault(*rules)
        elif request.method == "DELETE":
            fake.clear_faults()
        return _json([r.to_json() for r in fake.faults])

    return [
        web.get("/_fake/info", info),
        web.post("/_fake/message", _pusher(fake.push_message)),
        web.post("/_fake/edited_message", _pusher(fake.push_edited_message)),
        web.post("/_fake/callback_query", _pusher(fake.push_callback_query)),
        web.post("/_fake/media", _media_pusher(fake.push_media)),
        web.post("/_fake/update", push_update),
        web.get("/_fake/updates", updates),
        web.get("/_fake/calls", calls),
        web.get("/_fake/sent", sent),
        web.get("/_fake/send_times", send_times),
        web.get("/_fake/downloads", downloads),
        web.get("/_fake/early_retries", early_retries),
        web.route("*", "/_fake/faults", faults),
        *outbound_routes(fake),
    ]
