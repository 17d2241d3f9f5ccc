"""``/api/v1/sessions/{id}/pins``: the sections a session never summarises (summaries tier).

An operator (or a client acting for the user) pins a text — the task restated, a constraint,
a decision — and it is sent with every request of the session, in the reference block after
the system prompt, until it is unpinned. ``GET`` also shows the session's task (its first
message) and current summary, so a client can see what the model is told it already knows.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from duragent.gateways.http.openapi.schemas import (
    AUTH,
    NON_BLANK,
    SESSION_ID,
    STORAGE,
    json_body,
    json_response,
    problem,
)
from duragent.gateways.http.server.problem import ProblemError
from duragent.gateways.http.server.security import read_json
from duragent.gateways.http.services import HttpServices
from duragent.turns import PinRefusedError, SessionNotFoundError

__all__ = ["MAX_PIN_CHARS", "PIN_KINDS", "PinRoutes", "pin_paths"]

PIN_KINDS = ("note", "decision", "task")
MAX_PIN_CHARS = 8_000
"""A pin is a sentence or a paragraph. The agent's room for pins (``turns.pins``, often far
less at a small window) is checked after this cheap bound: a pin past it is a 400 naming
the limit in tokens and the fix."""


class PinRoutes:
    """Handlers bound to the services they call."""

    def __init__(self, services: HttpServices) -> None:
        self.s = services

    async def _session(self, request: Request) -> str:
        """The request's session id, once it is known to exist (404 otherwise)."""
        session_id: str = request.path_params["session_id"]
        try:
            await self.s.turns.sessions.info(session_id)
        except (SessionNotFoundError, OSError):
            raise ProblemError(404, "session not found") from None
        return session_id

    async def list(self, request: Request) -> Response:
        """GET …/pins → {pins, task, summary}."""
        memory = await self.s.turns.sessions.memory(await self._session(request))
        summary = memory.summary
        return JSONResponse(
            {
                "pins": [
                    {"pin_id": p.pin_id, "kind": p.kind, "text": p.text, "source": p.source}
                    for p in memory.pins
                ],
                "task": memory.task,
                "summary": (
                    None
                    if summary is None
                    else {
                        "round": summary.round,
                        "content": summary.text,
                        "through_seq": summary.through_seq,
                    }
                ),
            }
        )

    async def create(self, request: Request) -> Response:
        """POST …/pins {text, kind?} → 201 {pin_id}."""
        body = await read_json(request)
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ProblemError(400, "field 'text' is required and must be a non-empty string")
        if len(text) > MAX_PIN_CHARS:
            raise ProblemError(
                400, f"field 'text' is {len(text)} characters; a pin may have {MAX_PIN_CHARS}"
            )
        kind = body.get("kind", "note")
        if kind not in PIN_KINDS:
            raise ProblemError(400, f"field 'kind' must be one of {', '.join(PIN_KINDS)}")
        session_id = await self._session(request)
        try:
            pin_id = await self.s.turns.pin(session_id, text, kind=kind, source="operator")
        except PinRefusedError as exc:  # it could never be sent: every turn would fail
            raise ProblemError(
                400,
                f"field 'text': {exc}".replace("{id}", session_id),
                extra={
                    "field": "text",
                    "limit_tokens": exc.room,
                    "tokens": exc.new,
                    "pinned_tokens": exc.others,
                    "fix": exc.fix.replace("{id}", session_id),
                },
            ) from None
        return JSONResponse({"pin_id": pin_id}, status_code=201)

    async def delete(self, request: Request) -> Response:
        """DELETE …/pins/{pin_id} → 204 (404 when there is no such pin)."""
        session_id = await self._session(request)
        if not await self.s.turns.unpin(session_id, request.path_params["pin_id"]):
            raise ProblemError(404, "no such pin in this session")
        return Response(status_code=204)


def pin_paths() -> dict[str, Any]:
    """The OpenAPI paths of the pins routes."""
    pin = {
        "type": "object",
        "required": ["pin_id", "kind", "text", "source"],
        "properties": {
            "pin_id": {"type": "string"},
            "kind": {"enum": list(PIN_KINDS)},
            "text": {"type": "string"},
            "source": {"type": "string"},
        },
    }
    body = {
        "type": "object",
        "required": ["text"],
        "properties": {
            "text": {**NON_BLANK, "maxLength": MAX_PIN_CHARS},
            "kind": {"enum": list(PIN_KINDS)},
        },
    }
    pin_id = {"name": "pin_id", "in": "path", "required": True, "schema": NON_BLANK}
    return {
        "/api/v1/sessions/{session_id}/pins": {
            "get": {
                "summary": "Pinned sections, the task and the current summary",
                "parameters": [SESSION_ID],
                "responses": {
                    "200": json_response(
                        {
                            "type": "object",
                            "required": ["pins"],
                            "properties": {"pins": {"type": "array", "items": pin}},
                        }
                    ),
                    "404": problem("No such session"),
                    "409": problem("Quarantined"),
                    **AUTH,
                    **STORAGE,
                },
            },
            "post": {
                "summary": "Pin a section: sent with every request, never summarised",
                "parameters": [SESSION_ID],
                "requestBody": json_body(body),
                "responses": {
                    "201": json_response({"type": "object", "required": ["pin_id"]}, "Pinned"),
                    "400": problem(
                        "Invalid body, or the pins would not fit the agent's room for them "
                        "(field, limit_tokens, tokens, pinned_tokens and fix say by how much)"
                    ),
                    "404": problem("No such session"),
                    "409": problem("Quarantined"),
                    "413": problem("Body too large"),
                    **AUTH,
                    **STORAGE,
                },
            },
        },
        "/api/v1/sessions/{session_id}/pins/{pin_id}": {
            "delete": {
                "summary": "Unpin a section",
                "parameters": [SESSION_ID, pin_id],
                "responses": {
                    "204": {"description": "Unpinned"},
                    "404": problem("No such session or pin"),
                    "409": problem("Quarantined"),
                    **AUTH,
                    **STORAGE,
                },
            }
        },
    }
