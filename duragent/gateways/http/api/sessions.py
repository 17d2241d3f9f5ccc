"""Session routes: create, list, get, delete, end, messages, stream, history, approve, files.

``files``: an attachment's bytes (``GET …/attachments/{sha256}``).

A message may carry attachments (``uploads``: JSON base64 parts or a multipart form); their
bytes are kept in the session before the message is submitted, so its event never names a
file that is not stored. History lists them with a download path (``attachments``). The
files the agent sends with a reply (``send_file``) come back the same way: in the reply's
``attachments`` (``POST …/messages``, ``…/approve``, the stream's ``done``) and on the
assistant's message in history, each with the path of its bytes.

An ended session (status ``completed``: ``POST …/end``, a chat's ``/reset``, TTL expiry)
takes no more turns: messages, stream and approve answer 404, as the reference's code does
(it drops an ended session from its registry; its documentation's 410 ``session_ended`` is
not what it answers). Its summary and history stay readable here, where the reference
forgets them. Messages and stream read nothing first: the turn itself refuses an ended or
missing session before writing anything (two round trips to the session per turn, issue 35).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from duragent.core.snapshot import SessionStatus
from duragent.errors import AgentNotFoundError, LLMError
from duragent.gateways.http.api.attachments import (
    download,
    reply_file_views,
    with_attachment_urls,
)
from duragent.gateways.http.api.cut_turns import interrupted_problem, reply_body
from duragent.gateways.http.api.keeping import keep_uploads
from duragent.gateways.http.api.paging import (
    MAX_MESSAGES_LIMIT,
    MAX_SESSIONS_LIMIT,
    limited,
    quoted,
    read_limit,
)
from duragent.gateways.http.api.stream import TURN_HEADER, OpenStreams, stream_turn
from duragent.gateways.http.api.uploads import read_message
from duragent.gateways.http.cluster.forwarding import IDEMPOTENCY_KEY
from duragent.gateways.http.server.problem import ProblemError, failed_turn_status
from duragent.gateways.http.server.security import read_json
from duragent.gateways.http.services import HttpServices
from duragent.observability.logctx import log_context, new_turn_id
from duragent.turns import (
    DECISIONS,
    ApprovalError,
    AwaitingApproval,
    Complete,
    Duplicate,
    Failed,
    Incoming,
    Interruption,
    NoPendingApprovalError,
    SessionEndedError,
    SessionNotFoundError,
    TurnResult,
    Waited,
    events_to_messages,
)

__all__ = ["SessionRoutes"]

log = logging.getLogger(__name__)

_MAX_SESSION_ID_BYTES = 255  # NAME_MAX: a session id is a folder name
_BOOLEANS = {"true": True, "false": False}


def _text_field(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ProblemError(400, f"field '{name}' is required and must be a non-empty string")
    return value


def _session_id(request: Request) -> str:
    """The ``{session_id}`` path parameter; 404 for one no session folder could have.

    A name longer than a file name may be makes the store's ``stat`` fail with
    ``ENAMETOOLONG`` (an OSError, not "no such session"), so it is answered here.
    """
    session_id: str = request.path_params["session_id"]
    if len(session_id.encode("utf-8", "surrogatepass")) > _MAX_SESSION_ID_BYTES:
        raise ProblemError(404, "session not found")
    return session_id


_MAX_KEY = 200


def message_key(request: Request) -> str | None:
    """The idempotency key of the message ``request`` carries, recorded with it.

    A message sent again with the same key is not recorded twice: an answered one answers
    ``{"status": "duplicate"}``, an unanswered one (its turn was cut: a node died or paused
    mid-turn) gets its turn, and one whose cut turn was settled by another request gets what
    was recorded (``cut_turns``: the reply it went on to, or 409 "turn_interrupted"). The
    key is the client's ``Idempotency-Key`` header, or the one a
    node gave a request it forwards (``cluster.forwarding``: the same request served again elsewhere
    after its first owner went away must not record the message a second time).
    """
    key: str | None = getattr(request.state, "message_key", None)
    if key is None:
        key = request.headers.get(IDEMPOTENCY_KEY) or None
    if key is not None and (len(key) > _MAX_KEY or not key.isprintable()):
        raise ProblemError(400, f"Idempotency-Key must be ≤ {_MAX_KEY} printable characters")
    return None if key is None else f"http:{key}"


def _reply(result: TurnResult) -> Response:
    """``POST …/messages``: the turn's outcome as JSON (a steered request gets the reply too)."""
    match result:
        case Complete(message_id=message_id, content=content, interruption=cut, attachments=files):
            files_shown = reply_file_views(result.session_id, files)
            return JSONResponse(reply_body(message_id, content, cut, files_shown))
        case AwaitingApproval(call_id=call_id, command=command):
            return JSONResponse(
                {"session_id": result.session_id, "call_id": call_id, "command": command},
                status_code=202,
            )
        case Duplicate(interruption=None):  # answered: its reply went to its first request
            return JSONResponse({"status": "duplicate", "session_id": result.session_id})
        case Duplicate(interruption=Interruption(reply=str(reply)) as cut):  # cut, went on
            return JSONResponse(reply_body(cut.message_id, reply, cut))
        case Duplicate(interruption=Interruption() as cut):  # cut, never answered
            raise interrupted_problem(result.session_id, cut)
        case Failed(content=content, code=code):
            raise ProblemError(failed_turn_status(code), content)
    raise AssertionError(f"unhandled turn result {result!r}")  # pragma: no cover


def _resumed(result: Complete | AwaitingApproval | Failed) -> Response:
    """``POST …/approve``: the outcome of the turn the decision resumed, as JSON."""
    match result:
        case Complete(message_id=message_id, content=content, attachments=files):
            body: dict[str, Any] = {
                "status": "complete",
                "message_id": message_id,
                "content": content,
            }
            if files:  # sent before the pause or after it, they go with this reply
                body["attachments"] = reply_file_views(result.session_id, files)
            return JSONResponse(body)
        case AwaitingApproval(call_id=call_id, command=command):
            return JSONResponse(
                {"status": "pending_approval", "call_id": call_id, "command": command},
                status_code=202,
            )
        case Failed(content=content, code=code):
            raise ProblemError(failed_turn_status(code), content)


class SessionRoutes:
    """Handlers bound to the services they call."""

    def __init__(self, services: HttpServices, streams: OpenStreams | None = None) -> None:
        self.s = services
        self.streams = streams if streams is not None else OpenStreams()

    async def _known(self, session_id: str) -> dict[str, Any]:
        try:
            info = await self.s.turns.sessions.info(session_id)
        except SessionNotFoundError:
            raise ProblemError(404, "session not found") from None
        # SessionQuarantinedError: the app answers 409 with the reason (every time)
        return {
            "session_id": info.session_id,
            "agent": info.agent,
            "status": info.status.value,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
            "on_disconnect": info.on_disconnect,
            "pending_approval": info.pending_approval is not None,
        }

    async def _open(self, session_id: str) -> dict[str, Any]:
        """The session's summary; 404 when it does not exist or has ended."""
        info = await self._known(session_id)
        if info["status"] == SessionStatus.COMPLETED.value:
            raise ProblemError(
                404,
                f"session {session_id} has ended (status completed): it takes no more "
                "messages; create a new session",
            )
        return info

    async def create(self, request: Request) -> Response:
        """POST /api/v1/sessions {agent} → 201."""
        body = await read_json(request)
        agent = _text_field(body, "agent")
        try:
            session_id = await self.s.turns.start_session(agent)
        except AgentNotFoundError as exc:
            raise ProblemError(404, str(exc)) from None
        info = await self._known(session_id)
        keys = ("session_id", "agent", "status", "created_at")
        return JSONResponse({k: info[k] for k in keys}, status_code=201)

    async def list(self, request: Request) -> Response:
        """GET /api/v1/sessions?limit=N (newest first)."""
        limit = read_limit(request, default=100, maximum=MAX_SESSIONS_LIMIT)
        sessions = await self.s.turns.sessions.list_sessions(limit=limit.value)
        return limited({"sessions": sessions}, limit)

    async def get(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}."""
        info = await self._known(_session_id(request))
        return JSONResponse(info)

    async def delete(self, request: Request) -> Response:
        """DELETE /api/v1/sessions/{id} → 204."""
        try:
            await self.s.turns.delete(_session_id(request))
        except SessionNotFoundError:
            raise ProblemError(404, "session not found") from None
        return Response(status_code=204)

    async def end(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/end: completed, files kept (again: the same answer)."""
        session_id = _session_id(request)
        info = await self._known(session_id)
        if info["status"] != SessionStatus.COMPLETED.value:
            await self.s.turns.complete(session_id)
            info = await self._known(session_id)
        return JSONResponse(info)

    async def history(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/messages?limit=N&include_tools=true: the LAST N."""
        session_id = _session_id(request)
        await self._known(session_id)
        limit = read_limit(request, default=100, maximum=MAX_MESSAGES_LIMIT)
        raw_tools = request.query_params.get("include_tools", "false")
        include_tools = _BOOLEANS.get(raw_tools.lower())
        if include_tools is None:
            raise ProblemError(400, f"include_tools must be true or false, got {quoted(raw_tools)}")
        events = await self.s.turns.sessions.events(session_id, include_archive=True)
        messages = events_to_messages(events, include_tools=include_tools)[-limit.value :]
        with_attachment_urls(session_id, messages)
        return limited({"messages": messages}, limit)

    async def attachment(self, request: Request) -> Response:
        """GET /api/v1/sessions/{id}/attachments/{sha256}: the bytes a message carried."""
        session_id = _session_id(request)
        return await download(self.s.turns, session_id, request.path_params["sha256"])

    async def send(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/messages {content, attachments}: a full turn."""
        session_id = _session_id(request)
        new = await read_message(request)
        key = message_key(request)
        turn = {TURN_HEADER: new_turn_id()}
        # No read first (a turn is two round trips to the session): a session that does not
        # exist or has ended is refused by the turn before anything is written (404 both).
        with log_context(session_id=session_id, front_end="http", turn_id=turn[TURN_HEADER]):
            attachments = await keep_uploads(self.s, session_id, new.uploads)
            try:
                message = Incoming(new.content, None, None, key, attachments=attachments)
                ticket = await self.s.turns.submit(
                    session_id, message, Waited(self.s.tasks, name=f"turn-{session_id}")
                )
                result = await ticket.result(
                    wait_at_most=self.s.config.server.request_timeout_seconds
                )
            except TimeoutError:
                raise ProblemError(
                    408,
                    "the turn did not finish within request_timeout_seconds; it continues in "
                    "the background and its reply will appear in GET …/messages",
                    headers=turn,
                ) from None
            except SessionEndedError as exc:
                raise ProblemError(404, str(exc), headers=turn) from None
            try:
                response = _reply(result)
            except ProblemError as exc:
                exc.headers.update(turn)
                raise
        response.headers.update(turn)
        return response

    async def stream(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/stream {content, attachments}: the turn as SSE."""
        session_id = _session_id(request)
        new = await read_message(request)
        key = message_key(request)
        server = self.s.config.server
        # No read first, as ``send``: the stream opens once the turn recorded its message, and
        # learns the session's agent (for the logs) and on_disconnect from that round trip.
        with log_context(front_end="http"):  # stream_turn keeps these
            attachments = await keep_uploads(self.s, session_id, new.uploads)
            try:
                return await stream_turn(
                    self.s.turns,
                    self.s.tasks,
                    session_id,
                    new.content,
                    keep_alive=server.keep_alive_interval_seconds,
                    streams=self.streams,
                    turn_id=new_turn_id(),
                    message_key=key,
                    attachments=attachments,
                )
            except SessionEndedError as exc:
                raise ProblemError(404, str(exc)) from None
            except SessionNotFoundError:
                raise ProblemError(404, "session not found") from None

    async def _tell_chat(self, session_id: str, result: TurnResult) -> None:
        """A chat's session resumed over HTTP: the rest of its turn goes to the chat too.

        The chat's people asked and wait there (an approval only an owner may answer may be
        decided here). Delivered in the background, recorded once (``frontkit.delivery``):
        the HTTP answer does not wait for the platform.
        """
        chat = (await self.s.turns.sessions.info(session_id)).chat
        delivery = self.s.chat_delivery(chat.gateway) if chat is not None else None
        if chat is None or delivery is None:
            return

        async def deliver() -> None:
            try:
                await delivery.deliver(chat, result)
            except Exception as exc:  # the chat's recovery delivers an owed reply at start
                log.warning("session %s: could not deliver to %s: %s", session_id, chat, exc)

        self.s.tasks.spawn(deliver(), name=f"deliver-{chat.target}")

    async def approve(self, request: Request) -> Response:
        """POST /api/v1/sessions/{id}/approve {call_id, decision}."""
        session_id = _session_id(request)
        body = await read_json(request)
        call_id = _text_field(body, "call_id")
        decision = _text_field(body, "decision")
        if decision not in DECISIONS:
            raise ProblemError(
                400, f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}"
            )
        if "command" in body and not isinstance(body["command"], str):
            # Informational only (allow_always saves the pending command, never this one).
            raise ProblemError(400, "field 'command' must be a string")
        info = await self._open(session_id)
        turn = {TURN_HEADER: new_turn_id()}  # the resumed turn: a turn of its own in the logs
        with log_context(
            session_id=session_id, agent=info["agent"], front_end="http", turn_id=turn[TURN_HEADER]
        ):
            try:
                result = await self.s.turns.approve(session_id, call_id, decision)
                response = _resumed(result)
                await self._tell_chat(session_id, result)
            except NoPendingApprovalError as exc:
                raise ProblemError(404, str(exc), headers=turn) from None
            except ApprovalError as exc:  # another call_id waits, or allow_always not saved
                raise ProblemError(409, str(exc), headers=turn) from None
            except LLMError as exc:  # nothing was resolved: the same approval can be sent again
                raise ProblemError(
                    502, f"{exc}; the approval is still pending", headers=turn
                ) from None
            except ProblemError as exc:
                exc.headers.update(turn)
                raise
        response.headers.update(turn)
        return response
