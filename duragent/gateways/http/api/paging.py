"""``?limit=N`` on list endpoints: a positive integer, clamped to the endpoint's maximum.

The reference accepts any positive limit, so a client written for it may ask for 100,000
messages. Refusing that with a 400 (as this server once did) fails such a client for no gain:
the server answers the most it will give instead, and says so, in the ``X-Limit-Clamped``
header (the limit applied) and in a ``limit_clamped_to`` field of the JSON object, so a
client can tell "that is all there is" from "that is all you get". Zero, negative and
non-integer limits stay 400 problems: they are mistakes, not large requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from duragent.gateways.http.server.problem import ProblemError

__all__ = [
    "LIMIT_CLAMPED_FIELD",
    "LIMIT_CLAMPED_HEADER",
    "MAX_MESSAGES_LIMIT",
    "MAX_SESSIONS_LIMIT",
    "Limit",
    "limited",
    "quoted",
    "read_limit",
]

MAX_SESSIONS_LIMIT = 1000
"""``GET /api/v1/sessions?limit=``: above this, this many."""
MAX_MESSAGES_LIMIT = 10_000
"""``GET …/messages?limit=``: above this, this many (the last ones)."""
LIMIT_CLAMPED_HEADER = "X-Limit-Clamped"
"""Set (to the limit applied) only when the requested limit was above the maximum."""
LIMIT_CLAMPED_FIELD = "limit_clamped_to"
"""The same, as a member of the JSON object answered."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_MAX_DIGITS = 9  # int() refuses thousands of digits; anything longer is above every maximum


@dataclass(frozen=True, slots=True)
class Limit:
    """The limit to apply, and whether it is the maximum standing in for a larger request."""

    value: int
    clamped: bool = False


def quoted(raw: str) -> str:
    """A query value quoted for an error detail, cut short (it may be kilobytes long)."""
    return repr(raw if len(raw) <= 40 else raw[:40] + "…")


def read_limit(request: Request, *, default: int, maximum: int) -> Limit:
    """The ``limit`` query parameter; 400 unless a positive integer; above ``maximum``, it."""
    raw = request.query_params.get("limit")
    if raw is None:
        return Limit(default)
    # int() would also take " 5", "1_0" and non-ASCII digits; the document says integer.
    if not _INTEGER.fullmatch(raw):
        raise ProblemError(400, f"limit must be a positive integer, got {quoted(raw)}")
    negative = raw.startswith("-")
    digits = raw.lstrip("+-").lstrip("0")
    if negative or not digits:
        raise ProblemError(400, f"limit must be 1 or more, got {quoted(raw)}")
    if len(digits) > _MAX_DIGITS or int(digits) > maximum:
        return Limit(maximum, clamped=True)
    return Limit(int(digits))


def limited(body: dict[str, Any], limit: Limit) -> JSONResponse:
    """``body`` as JSON, marked (header and field) when ``limit`` was clamped."""
    if not limit.clamped:
        return JSONResponse(body)
    return JSONResponse(
        {**body, LIMIT_CLAMPED_FIELD: limit.value},
        headers={LIMIT_CLAMPED_HEADER: str(limit.value)},
    )
