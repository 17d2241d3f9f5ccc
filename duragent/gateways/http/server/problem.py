"""RFC 7807 ``application/problem+json`` error responses, one registered type per status.

Every status the server answers with an error has an entry in :data:`PROBLEM_TYPES` (type
URN, title, what it means); the OpenAPI document lists them. :func:`problem` and
:class:`ProblemError` refuse a status that has none, so a handler that starts answering a
new status fails where it is written (and in the tests that walk the handlers), instead of
going out mislabelled as an internal error, as three 502 answers once did.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.responses import JSONResponse

__all__ = [
    "FAILED_TURN_STATUS",
    "PROBLEM_CONTENT_TYPE",
    "PROBLEM_TYPES",
    "ProblemError",
    "ProblemType",
    "UnregisteredProblemError",
    "failed_turn_status",
    "problem",
    "problem_type",
]

PROBLEM_CONTENT_TYPE = "application/problem+json"

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class ProblemType:
    """One kind of error: ``urn:duragent:problem:<name>``, its title and what it means."""

    name: str
    title: str
    meaning: str

    @property
    def urn(self) -> str:
        """The ``type`` member of the problem body."""
        return f"urn:duragent:problem:{self.name}"


PROBLEM_TYPES: Mapping[int, ProblemType] = {
    400: ProblemType("bad-request", "Bad Request", "The request is malformed; detail says how."),
    401: ProblemType("unauthorized", "Unauthorized", "Missing or wrong bearer token."),
    403: ProblemType(
        "forbidden", "Forbidden", "Refused: admin access, or a Host/Origin not allowed."
    ),
    404: ProblemType("not-found", "Not Found", "No such route, agent, session or approval."),
    405: ProblemType(
        "method-not-allowed", "Method Not Allowed", "The path exists; Allow lists its methods."
    ),
    408: ProblemType(
        "request-timeout",
        "Request Timeout",
        "The request did not arrive in time, or the turn outlived request_timeout_seconds "
        "(it continues in the background).",
    ),
    409: ProblemType(
        "conflict",
        "Conflict",
        "The session is quarantined, another approval is pending, a shutdown is under way, "
        "the session's pins no longer fit its agent (detail names them and how to unpin), or "
        "the message's turn was cut and never answered (code turn_interrupted).",
    ),
    413: ProblemType(
        "payload-too-large",
        "Payload Too Large",
        "The body exceeds 2 MiB (a message with attachments: more), or an attachment exceeds "
        "its kind's size (field names it).",
    ),
    415: ProblemType(
        "unsupported-media-type",
        "Unsupported Media Type",
        "Bodies must be application/json (a message with files: or multipart/form-data).",
    ),
    429: ProblemType("too-many-requests", "Too Many Requests", "Slow down and retry."),
    500: ProblemType(
        "internal-error", "Internal Server Error", "A bug: the details are logged on the server."
    ),
    502: ProblemType(
        "bad-gateway",
        "Bad Gateway",
        "The model provider failed or could not be reached; detail has its error. Nothing "
        "accepted was lost (a pending approval stays pending).",
    ),
    503: ProblemType(
        "service-unavailable",
        "Service Unavailable",
        "Not ready, shutting down, the disk refused a write, or the database cannot be "
        "reached (storage names which; retry after Retry-After).",
    ),
    507: ProblemType(
        "insufficient-storage", "Insufficient Storage", "The disk is full; nothing was recorded."
    ),
}


FAILED_TURN_STATUS: Mapping[str, int] = {"pins_over_budget": 409}
"""A failed turn's status by its ``Failed.code``: 502 (the model failed) unless listed here.

The session's pins outgrowing their room is no failure of the model, and retrying cannot
help: 409, with the pins and how to unpin them in ``detail``."""


def failed_turn_status(code: str) -> int:
    """The HTTP status of a turn that failed with ``code`` (``FAILED_TURN_STATUS``)."""
    return FAILED_TURN_STATUS.get(code, 502)


class UnregisteredProblemError(ValueError):
    """A handler tried to answer a status that has no :data:`PROBLEM_TYPES` entry."""


def problem_type(status: int) -> ProblemType:
    """The registered type of ``status``; :class:`UnregisteredProblemError` if there is none."""
    try:
        return PROBLEM_TYPES[status]
    except KeyError:
        raise UnregisteredProblemError(
            f"HTTP {status} has no problem type: add it to PROBLEM_TYPES in {__name__}"
        ) from None


def problem(
    status: int,
    detail: str | None = None,
    *,
    instance: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> JSONResponse:
    """A problem+json response for ``status`` (``extra``: RFC 7807 extension members)."""
    kind = problem_type(status)
    body: dict[str, object] = {"type": kind.urn, "title": kind.title, "status": status}
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

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        problem_type(status)  # refused here, at the raise, not later in the error handler
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})
        """Sent with the answer (``X-Duragent-Turn`` of a turn that failed)."""
        self.extra = dict(extra or {})
        """RFC 7807 extension members (``field``, ``fix``, a limit) a client can act on."""
        super().__init__(detail)
