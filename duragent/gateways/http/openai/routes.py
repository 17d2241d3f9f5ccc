"""The OpenAI-compatible API: ``POST /v1/chat/completions`` and ``GET /v1/models``.

So the official ``openai`` SDK, and every tool built on it, can talk to any agent. The turn
itself is the normal one (``TurnRunner.run``, tools on the server, the reply durable before
it is answered); this module only maps OpenAI's request onto a session and back.

**Which session.** ``model`` names the agent. The conversation is chosen by a key: the
top-level ``session_id`` field (nanobot's convention), else the ``X-Duragent-Session``
header, else the ``user`` field. A key that is the id of an existing session of that agent
(``session_…``, as this API returns in ``duragent.session_id`` and the
``X-Duragent-Session`` response header) continues that session; any other key is the
client's own name for a conversation, mapped durably (the chat index, gateway ``openai``)
to one session per (key, agent), created on first use and found again after a restart.
Without a key each call starts a fresh session: an ordinary session (listed by
``GET /api/v1/sessions``, expired by the agent's ``ttl_hours`` like any other) that can be
continued by sending its id back.

**Several nodes** (a shared store): the route runs through ``cluster.forwarding.SessionForwarding``
like ``/api/v1/sessions/{id}/…``: a conversation whose session another node owns is answered
by that node (the request forwarded as a signed hop, a stream passed through chunk by
chunk), or here once a gone owner's lease ran out. The message carries the request's key
(``api.sessions.message_key``): served again after a fenced write, it is recorded once.

**Models** are the agents; a model's ``created`` is when its ``agent.yaml`` was last
modified.

**What it says**: every model call's words of the turn, a blank line apart, the same
streamed or not (``text``).

**Images**: ``image_url`` parts with ``data:`` URLs become the new message's image
attachments (``parts``), kept in the session before the message is submitted, as
``POST /api/v1/sessions/{id}/messages`` keeps its uploads. Remote URLs are refused (``wire``).
Files the agent sends back (``send_file``) are listed in the completion's ``duragent``
extension with the path of their bytes, not in its content (``wire`` says why).

**Errors** are OpenAI's shape (``wire``); the app turns the problem+json answers of
shared code (auth, body size, quarantine, storage) into it for every ``/v1/`` path.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from duragent.agents import Agent
from duragent.agents.loader import AGENT_FILENAME
from duragent.errors import AgentNotFoundError
from duragent.gateways.http.api.cut_turns import TURN_INTERRUPTED, interrupted_detail
from duragent.gateways.http.api.keeping import keep_uploads
from duragent.gateways.http.api.sessions import message_key
from duragent.gateways.http.api.stream import TURN_HEADER, OpenStreams, stream_turn
from duragent.gateways.http.api.uploads import Upload
from duragent.gateways.http.openai.parts import image_uploads
from duragent.gateways.http.openai.stream import ChunkWire
from duragent.gateways.http.openai.text import TextSink
from duragent.gateways.http.openai.wire import (
    SESSION_HEADER,
    OpenAIChatRequest,
    OpenAIError,
    completion,
    error_response,
    parse_chat_request,
)
from duragent.gateways.http.server.media_limits import upload_limits
from duragent.gateways.http.server.problem import failed_turn_status
from duragent.gateways.http.server.security import read_json
from duragent.gateways.http.services import HttpServices
from duragent.observability.logctx import log_context, new_turn_id
from duragent.turns import (
    Duplicate,
    Failed,
    Incoming,
    SessionAgentMismatchError,
    SessionEndedError,
    SessionNotFoundError,
    Waited,
)

__all__ = ["FRONT_END", "OpenAIRoutes"]

FRONT_END = "openai"
"""The gateway name of sessions this API keys, and the ``front_end`` of its log lines (no
external gateway may take it: ``config.workspace``)."""

_SESSION_ID = re.compile(r"session_[0-9A-HJKMNP-TV-Z]{26}")
"""What ``core.ids.new_session_id`` makes: only such a key is looked up as a session (any
other string, ``../x`` or 800 bytes long, is a client's name and never reaches a path)."""


class OpenAIRoutes:
    """Handlers bound to the services they call."""

    def __init__(self, services: HttpServices, streams: OpenStreams) -> None:
        self.s = services
        self.streams = streams

    async def models(self, _: Request) -> Response:
        """GET /v1/models: every agent, as a model."""
        catalog = self.s.catalog
        data = [_model_entry(catalog.get(name)) for name in catalog.names()]
        return JSONResponse({"object": "list", "data": data})

    async def model(self, request: Request) -> Response:
        """GET /v1/models/{model}: one agent, as a model (404 in OpenAI's shape)."""
        name = request.path_params["model"]
        try:
            agent = self.s.catalog.get(name)
        except AgentNotFoundError:
            return error_response(_no_model(name))
        return JSONResponse(_model_entry(agent))

    async def chat(self, request: Request) -> Response:
        """POST /v1/chat/completions: one turn of the agent named by ``model``."""
        try:
            body = await read_json(request)
            chat = parse_chat_request(body, request.headers.get(SESSION_HEADER))
            try:
                self.s.catalog.get(chat.model)
            except AgentNotFoundError:
                raise _no_model(chat.model) from None
            where = f"messages[{len(body['messages']) - 1}].content"
            uploads = await image_uploads(chat.images, where, upload_limits(request.scope))
            return await self._unread_turn(chat, message_key(request), uploads)
        except OpenAIError as exc:
            return error_response(exc)

    async def _unread_turn(
        self, chat: OpenAIChatRequest, key: str | None, uploads: list[Upload]
    ) -> Response:
        """A turn with no read before it: two round trips to the session, as any turn.

        A key that looks like a session id is taken as one; the turn itself refuses a
        session of another agent, or an ended one, before writing anything (issue 35), and
        before a stream opens (``stream_turn`` raises the refusal). A key that is not a
        session here is the client's own name for a conversation.
        """
        named = chat.key
        if named is not None and _SESSION_ID.fullmatch(named):
            try:
                return await self._turn(chat, named, key, uploads)
            except SessionNotFoundError:
                pass  # not a session here: the client's own name for a conversation
            except SessionAgentMismatchError as exc:
                raise _agent_mismatch(named, exc.agent, chat.model) from None
            except SessionEndedError:
                raise _ended(named) from None
        return await self._turn(chat, await self._new_or_keyed(chat), key, uploads)

    async def _new_or_keyed(self, chat: OpenAIChatRequest) -> str:
        """The session of ``chat.key`` (made on first use), or a new one without a key."""
        if chat.key is None:
            return await self.s.turns.start_session(chat.model, gateway=FRONT_END)
        return await self.s.turns.session_for_chat(FRONT_END, chat.key, chat.model)

    async def _turn(
        self, chat: OpenAIChatRequest, session_id: str, key: str | None, uploads: list[Upload]
    ) -> Response:
        """The turn, streamed (opened once its message is recorded: ``stream_turn``) or not.

        The message's images are kept in the session first (``SessionNotFoundError`` when it
        is not one: the key is then the client's own name for a conversation).
        """
        turn_id = new_turn_id()
        headers = {TURN_HEADER: turn_id, SESSION_HEADER: session_id}
        with log_context(
            session_id=session_id, agent=chat.model, front_end=FRONT_END, turn_id=turn_id
        ):
            attachments = await keep_uploads(self.s, session_id, uploads)
            if chat.stream:
                response: Response = await stream_turn(
                    self.s.turns,
                    self.s.tasks,
                    session_id,
                    chat.content,
                    keep_alive=self.s.config.server.keep_alive_interval_seconds,
                    streams=self.streams,
                    wire=ChunkWire(chat.model, turn_id, include_usage=chat.include_usage),
                    turn_id=turn_id,
                    message_key=key,
                    agent=chat.model,
                    attachments=attachments,
                )
                response.headers[SESSION_HEADER] = session_id
                return response
            words = TextSink()  # what the stream would have sent (``text``)
            try:
                message = Incoming(
                    chat.content, None, None, key, agent=chat.model, attachments=attachments
                )
                how = Waited(self.s.tasks, words, name=f"openai-turn-{session_id}")
                ticket = await self.s.turns.submit(session_id, message, how)
                result = await ticket.result(
                    wait_at_most=self.s.config.server.request_timeout_seconds
                )
            except TimeoutError:
                raise OpenAIError(
                    408,
                    "the turn did not finish within request_timeout_seconds; it continues on "
                    f"the server and its reply will be in session {session_id} "
                    f"(GET /api/v1/sessions/{session_id}/messages)",
                    code="turn_timeout",
                    retry=False,  # the message is recorded: a retry would send it twice
                    headers=headers,
                ) from None
        if isinstance(result, Failed):
            raise OpenAIError(
                failed_turn_status(result.code),
                result.content,
                code="turn_failed",
                retry=False,  # the message and the failure are recorded
                headers=headers,
            )
        if isinstance(result, Duplicate) and result.interruption is not None:
            cut = result.interruption
            if cut.reply is None:  # cut, and nothing answered it: never "duplicate"
                raise OpenAIError(
                    409,
                    interrupted_detail(cut),
                    code=TURN_INTERRUPTED,
                    retry=False,  # the message is recorded once; a retry is a new turn
                    headers=headers,
                )
        content = words.content(result)
        return JSONResponse(completion(result, content, chat.model, turn_id), headers=headers)


def _model_entry(agent: Agent) -> dict[str, object]:
    """An agent as OpenAI's model object.

    ``created`` is when the agent's ``agent.yaml`` was last modified (whole seconds since
    the epoch): a real time, the same in the list and alone and across restarts, that moves
    when the agent is redefined. 0 if the file is gone (the agent is served until a reload).
    """
    try:
        created = int((agent.directory / AGENT_FILENAME).stat().st_mtime)
    except OSError:
        created = 0
    return {"id": agent.name, "object": "model", "created": created, "owned_by": "duragent"}


def _agent_mismatch(session_id: str, agent: str, model: str) -> OpenAIError:
    return OpenAIError(
        400,
        f"session {session_id} belongs to agent {agent!r}, not {model!r}: "
        "use that model, or another session_id",
        param="session_id",
        code="session_agent_mismatch",
    )


def _ended(session_id: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"session {session_id} has ended: it takes no more messages; omit session_id "
        "(or use a new one) to start a new conversation",
        param="session_id",
        code="session_ended",
    )


def _no_model(name: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"The model {name!r} does not exist: a model here is an agent's name "
        "(GET /v1/models lists them)",
        param="model",
        code="model_not_found",
    )
