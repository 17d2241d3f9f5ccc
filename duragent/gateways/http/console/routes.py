"""The web console at ``/ui``: pages that hold no data, and two read routes the pages need.

Why the pages hold no data: with ``server.api_token`` set, the token lives in the tab's
``sessionStorage`` and the console's script sends it as ``Authorization: Bearer`` on every
``fetch``, exactly as any API client does. A browser never attaches that header by itself, so
a page on another site cannot make the console act (no CSRF: nothing the console does is a
form post or rides on a cookie), and the token is never in a URL, a cookie or a log line. A
page request (a navigation) carries no token, so it cannot be authenticated; it is therefore
the same static shell for everyone, and everything a user or a model wrote reaches the
browser only as JSON, which the script puts into the page with ``textContent`` (never as
HTML). A strict Content-Security-Policy (scripts only from ``/ui/static``, no inline script,
no ``eval``) makes an escaping mistake inert rather than exploitable.

A message's attachments are listed under it with their download links; an image is shown
as a thumbnail. Both are fetched by the script with the token, like everything else, and
shown from a ``blob:`` URL of the script's own making (hence ``img-src blob:``): a link or an
``<img>`` pointing at the API would carry no token.

In loopback mode (no token) the shell is served to loopback clients only, and the browser
checks of ``server/browser.py`` (Host, Origin, JSON bodies) apply to every console request, as
to the API: ``/ui`` is in the ``api_token`` family.

The two ``/ui/api`` routes are read-only views the public API does not give in one call: the
sessions with their front end and chat, and one session's whole history with tool traffic,
summary markers, each model call's budget record and the pending approval's ``call_id``.
Everything that changes state goes through the public API (create, stream, approve, end).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.core.events import Event
from duragent.core.payloads import (
    ApprovalDecisionData,
    ApprovalRequiredData,
    AssistantResponseData,
    EventType,
    ToolsSkippedData,
)
from duragent.gateways.http.api.attachments import with_attachment_urls
from duragent.gateways.http.api.paging import MAX_MESSAGES_LIMIT, limited, read_limit
from duragent.gateways.http.server.problem import ProblemError
from duragent.gateways.http.server.security import check_access
from duragent.gateways.http.services import HttpServices
from duragent.turns import SessionNotFoundError, events_to_messages

__all__ = ["CONSOLE_HEADERS", "console_routes"]

_STATIC = resources.files("duragent.gateways.http.console") / "static"
_TYPES = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
CONSOLE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""Sent with every console page and file (see the module docstring for why)."""

_MAX_CONSOLE_SESSIONS = 500


def _static(name: str) -> bytes:
    return (_STATIC / name).read_bytes()


def _front_end(gateway: str | None, chat_id: str | None, chat_type: str | None) -> dict[str, str]:
    """How the console names a session's front end and chat: the listing's and the page's.

    One function for both views, fed by the same facts (the listing's entry and the session's
    info both carry ``gateway``, ``gateway_chat_id`` and ``gateway_chat_type``), so the
    overview cannot name a session otherwise than its page does. No gateway reads "http": the
    HTTP API starts its sessions without one (so does a schedule without a chat destination,
    which the scheduler would have to record for the console to name it). No chat is "".
    """
    chat = chat_id or ""
    if chat and chat_type:
        chat += f" ({chat_type})"
    return {"front_end": gateway or "http", "chat": chat}


def _with_budget(events: list[Event]) -> list[dict[str, Any]]:
    """The history with tools, each model answer carrying its budget record and usage.

    The public history (``GET …/messages``) leaves both out; the console shows, for every model
    call, what fitting the request did (window, limit, request tokens, trimmed, masked, …).
    """
    extra: dict[int, dict[str, Any]] = {}
    approvals: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.type == EventType.ASSISTANT_RESPONSE:
            response = AssistantResponseData.of(event.data)
            shown = (("budget", response.budget), ("usage", response.usage))
            found = {name: value for name, value in shown if value}
            if found:
                extra[event.seq] = found
        elif event.type == EventType.APPROVAL_REQUIRED:
            asked = ApprovalRequiredData.of(event.data)
            approvals[asked.call_id] = {"command": asked.command, "decision": None}
        elif event.type == EventType.TOOLS_SKIPPED:
            # a newer message cancels a waiting call: skipped with the reason, then ``deny``
            # recorded; the console shows the reason, not a decision nobody made
            skipped = ToolsSkippedData.of(event.data)
            for call_id in skipped.call_ids:
                waiting = approvals.get(call_id)
                if waiting is not None and waiting["decision"] is None:
                    waiting["cancelled"] = skipped.reason
        elif event.type == EventType.APPROVAL_DECISION:
            decided = ApprovalDecisionData.of(event.data)
            if decided.call_id in approvals:
                approvals[decided.call_id]["decision"] = decided.decision
    messages = events_to_messages(events, include_tools=True)
    for item in messages:
        item.update(extra.get(item["seq"], {}))
        for call in item.get("tool_calls") or ():
            approval = approvals.get(str(call.get("call_id")))
            if approval is not None:
                call["approval"] = approval
    return messages


class ConsoleRoutes:
    """The console's pages, files and read routes, bound to the services they read."""

    def __init__(self, services: HttpServices) -> None:
        self.s = services

    def _token(self) -> str | None:
        return self.s.config.server.api_token

    async def page(self, request: Request) -> Response:
        """GET /ui, /ui/sessions/{id}: the shell; the script reads the path and fetches."""
        if not self._token():  # loopback mode: the same clients as the API
            check_access(request, None, admin=False)
        return Response(_static("console.html"), media_type="text/html", headers=CONSOLE_HEADERS)

    async def file(self, request: Request) -> Response:
        """GET /ui/static/{name}: the script and the style sheet (no data in either)."""
        name = request.path_params["name"]
        if name not in _TYPES:
            raise ProblemError(404, "no such console file")
        return Response(_static(name), media_type=_TYPES[name], headers=CONSOLE_HEADERS)

    async def sessions(self, request: Request) -> Response:
        """GET /ui/api/sessions: the listing, with each session's front end and chat.

        The listing's entries already name the chat (from the actor, or the snapshot header's
        ``config``); the console adds only how it shows them, as the session view does.
        """
        check_access(request, self._token(), admin=False)
        limit = read_limit(request, default=100, maximum=_MAX_CONSOLE_SESSIONS)
        listed = await self.s.turns.sessions.list_sessions(limit=limit.value)
        sessions = [
            entry
            | _front_end(
                entry.get("gateway"), entry.get("gateway_chat_id"), entry.get("gateway_chat_type")
            )
            for entry in listed
        ]
        return limited({"sessions": sessions}, limit)

    async def session(self, request: Request) -> Response:
        """GET /ui/api/sessions/{id}: the session, its pending approval and whole history."""
        check_access(request, self._token(), admin=False)
        session_id = request.path_params["session_id"]
        queries = self.s.turns.sessions
        try:
            info = await queries.info(session_id)
        except (SessionNotFoundError, OSError):
            raise ProblemError(404, "session not found") from None
        limit = read_limit(request, default=1000, maximum=MAX_MESSAGES_LIMIT)
        events = await queries.events(session_id, include_archive=True)
        pending = info.pending_approval
        messages = _with_budget(events)[-limit.value :]
        with_attachment_urls(session_id, messages)
        body = {
            "session": {
                "session_id": info.session_id,
                "agent": info.agent,
                "status": info.status.value,
                "created_at": info.created_at,
                "updated_at": info.updated_at,
                "gateway": info.gateway,
                "gateway_chat_id": info.gateway_chat_id,
                "gateway_chat_type": info.gateway_chat_type,
                "message_count": info.message_count,
                "last_seq": info.last_seq,
                # a user message no turn has answered yet: a turn is (or should be) under way
                "awaiting_reply": info.awaits_answer,
                **_front_end(info.gateway, info.gateway_chat_id, info.gateway_chat_type),
            },
            "pending_approval": (
                None
                if pending is None
                else {
                    "call_id": pending.call_id,
                    "command": pending.command,
                    "tool_name": pending.tool_name,
                    "arguments": dict(pending.arguments),
                }
            ),
            "messages": messages,
        }
        return limited(body, limit)


def console_routes(services: HttpServices) -> list[Route]:
    """The routes to add to the app (``/ui`` and below)."""
    console = ConsoleRoutes(services)
    return [
        Route("/ui", console.page, methods=["GET", "HEAD"]),
        Route("/ui/", console.page, methods=["GET", "HEAD"]),
        Route("/ui/sessions/{session_id}", console.page, methods=["GET", "HEAD"]),
        Route("/ui/static/{name}", console.file, methods=["GET", "HEAD"]),
        Route("/ui/api/sessions", console.sessions, methods=["GET", "HEAD"]),
        Route("/ui/api/sessions/{session_id}", console.session, methods=["GET", "HEAD"]),
    ]
