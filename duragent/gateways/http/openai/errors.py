"""Every error under ``/v1/`` in OpenAI's shape, whoever answered it.

The OpenAI routes answer their own errors in OpenAI's shape (``wire.OpenAIError``),
but most refusals come from code every route shares and that speaks RFC 7807 problem+json:
bearer auth (401), the body-size cap (413), the browser guard (403/415), the connection
limit (429/503), an unknown method (405), a quarantined session (409), a full disk (507), a
crash (500). This outermost middleware rewrites such an answer on an OpenAI path, so a
client built on the SDK always gets ``{"error": {message, type, param, code}}`` (and its
typed exception) with the same status and headers (``Retry-After``, ``Allow``…). Problem
bodies are small and whole, so holding one back costs nothing; other responses, streams
included, pass through untouched.
"""

from __future__ import annotations

import json

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from duragent.gateways.http.openai.wire import dumps, error_body
from duragent.gateways.http.server.problem import PROBLEM_CONTENT_TYPE

__all__ = ["OPENAI_PATH_PREFIX", "OpenAIErrors"]

OPENAI_PATH_PREFIX = "/v1/"


class OpenAIErrors:
    """ASGI middleware: problem+json → OpenAI's error object on ``/v1/`` paths."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass through, rewriting a problem+json answer on an OpenAI path."""
        if scope["type"] != "http" or not str(scope["path"]).startswith(OPENAI_PATH_PREFIX):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def rewriting(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = MutableHeaders(raw=list(message.get("headers", [])))
                if headers.get("content-type", "").startswith(PROBLEM_CONTENT_TYPE):
                    start = message  # held until the body is whole
                    return
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                await _send_rewritten(send, start, b"".join(chunks))
                return
            await send(message)

        await self.app(scope, receive, rewriting)


async def _send_rewritten(send: Send, start: Message, body: bytes) -> None:
    status = int(start["status"])
    try:
        problem = json.loads(body)
    except ValueError:
        problem = {}
    message = problem.get("detail") or problem.get("title") if isinstance(problem, dict) else None
    new_body = dumps(error_body(status, str(message or "error"))).encode()
    headers = MutableHeaders(raw=list(start.get("headers", [])))
    headers["content-type"] = "application/json"
    headers["content-length"] = str(len(new_body))
    await send({"type": "http.response.start", "status": status, "headers": headers.raw})
    await send({"type": "http.response.body", "body": new_body})
