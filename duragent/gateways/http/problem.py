"""RFC 7807 ``application/problem+json`` error responses, with the reference's type URNs."""

from __future__ import annotations

import re
from collections.abc import Mapping

from starlette.responses import JSONResponse

__all__ = ["PROBLEM_CONTENT_TYPE", "ProblemError", "problem"]

PROBLEM_CONTENT_TYPE = "application/problem+json"

_SURROGATE = re.compile("[\ud800-\udfff]")

_TYPES = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    408: "request-timeout",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    429: "too-many-requests",
    503: "service-unavailable",
    507: "insufficient-storage",
}
_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    507: "Insufficient Storage",
}


def problem(
    status: int,
    detail: str | None = None,
    *,
    instance: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> JSONResponse:
    """A problem+json response for ``status`` (``extra``: RFC 7807 extension members)."""
    body: dict[str, object] = {
        "type": f"urn:duragent:problem:{_TYPES.get(status, 'internal-error')}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
    }
    if detail is not None:
        # A lone surrogate (from a JSON escape) cannot be encoded: the error itself would fail.
        body["detail"] = _SURROGATE.sub("\ufffd", detail)
    if instance is not None:
        body["instance"] = instance
    for key, value in (extra or {}).items():
        body.setdefault(key, _SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_CONTENT_TYPE)


class ProblemError(Exception):
    """Raised inside a handler to answer with a problem+json response."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(detail)
