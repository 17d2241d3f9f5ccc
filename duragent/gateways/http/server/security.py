"""Authentication and request-size rules for the HTTP API.

- ``/api/v1/*``: when ``server.api_token`` is set, ``Authorization: Bearer <token>`` is
  required (compared in constant time); without a token only loopback clients are served.
  Failure: 401.
- ``/api/admin/*``: the same with ``server.admin_token``; failure: 403.
- Health routes are public.
- Bodies over 2 MiB are refused with 413 before they are read into memory; a message's
  routes take more (its attachments: ``media_limits``).

What a browser could still do to a loopback server (CSRF, DNS rebinding) is refused earlier,
by ``browser.py``; slow and idle connections are cut by ``protocol.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import re
from typing import Any

from starlette.requests import Request

from duragent.gateways.http.server.media_limits import MAX_BODY_BYTES, body_limit
from duragent.gateways.http.server.problem import ProblemError

__all__ = ["MAX_BODY_BYTES", "check_access", "is_loopback", "read_body", "read_json"]

_PARSED_ON_THE_LOOP = 256 * 1024
"""A larger JSON body (a message's base64 attachments) is parsed off the event loop."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # the only way JSON can spell one


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and the like."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"


def _token_matches(presented: str, expected: str) -> bool:
    a = hashlib.sha256(presented.encode()).digest()
    b = hashlib.sha256(expected.encode()).digest()
    return hmac.compare_digest(a, b)


def check_access(request: Request, token: str | None, *, admin: bool) -> None:
    """Raise ProblemError (401 / 403) unless the request may use this route."""
    status = 403 if admin else 401
    if token:
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not presented or not _token_matches(presented, token):
            detail = "admin access denied" if admin else "missing or invalid bearer token"
            raise ProblemError(status, detail)
        return
    client = request.client.host if request.client else None
    if not is_loopback(client):
        raise ProblemError(
            status,
            "no token is configured, so only loopback clients are served; set "
            + ("server.admin_token" if admin else "server.api_token"),
        )


async def read_body(request: Request, limit: int | None = None) -> bytes:
    """The request body, at most ``limit`` bytes (the path's ``body_limit``): 413 beyond."""
    most = body_limit(request.scope) if limit is None else limit
    too_big = f"request body exceeds {most} bytes"
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > most:
        raise ProblemError(413, too_big, extra={"limit": most})
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > most:
            raise ProblemError(413, too_big, extra={"limit": most})
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, limit: int | None = None) -> dict[str, Any]:
    """The request body as a JSON object: 413 when too big, 400 when not a JSON object."""
    raw = await read_body(request, limit) or b"null"
    try:
        if len(raw) > _PARSED_ON_THE_LOOP:
            body = await asyncio.to_thread(json.loads, raw)
        else:
            body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProblemError(400, f"request body is not valid JSON: {exc}") from None
    except RecursionError:  # "[[[[…" a few thousand deep
        raise ProblemError(400, "request body is not valid JSON: nested too deeply") from None
    if not isinstance(body, dict):
        raise ProblemError(400, "request body must be a JSON object")
    if _SURROGATE_ESCAPE.search(raw):
        _replace_lone_surrogates(body)
    return body


def _replace_lone_surrogates(root: dict[str, Any] | list[Any]) -> None:
    """Replace lone surrogates by U+FFFD everywhere in ``root``, keys included.

    A JSON escape can spell a lone surrogate, which no UTF-8 text can hold; like
    ``core.events`` does for stored text, this makes it U+FFFD. Otherwise one echoed in a
    reply or an error detail makes encoding the response fail. Iterative, since json accepts
    nesting deeper than a recursion would.
    """
    stack: list[dict[str, Any] | list[Any]] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = _SURROGATE.sub("\ufffd", item)
                elif isinstance(item, dict | list):
                    stack.append(item)
            continue
        for key in list(node):
            item = node.pop(key)
            if isinstance(item, str):
                item = _SURROGATE.sub("\ufffd", item)
            elif isinstance(item, dict | list):
                stack.append(item)
            node[_SURROGATE.sub("\ufffd", key)] = item
