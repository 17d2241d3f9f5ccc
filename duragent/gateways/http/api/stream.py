"""``POST /api/v1/sessions/{id}/stream``: a turn as Server-Sent Events.

Events: ``start`` {} → ``token`` {content} … ``tool_call`` {call_id, name, arguments} →
``tool_result`` {call_id, success, content} → … → ``done`` {message_id, status, usage, and
``attachments`` when the reply carries files} or
``approval_required`` {call_id, command} then ``done``, or ``error`` {message}, or
``cancelled`` {} (as the reference's code names it) when the server stopped the turn.
Keep-alive comments every ``keep_alive_interval_seconds``. Tools run here exactly as in the
synchronous endpoint (the reference's stream never ran them).

No read of the session comes first: the turn starts, and the response opens once its message
is recorded (``TurnSink.opened``), which brings the session's agent and disconnect policy
from that same round trip (a streamed turn asks its session twice, as a plain one, issue
35). Whatever the turn raises before its message is recorded (no such session, an ended one,
one of another agent, one another node owns, a disk that refused the write) is raised
before the stream opens, and the app answers it as it does for any request (404, 409, a
forward to the owner node, 503…): nothing was written.
The queue the events go through is ``stream_queue``.

When the server stops, an open stream gets ``STOP_GRACE_SECONDS`` to finish its turn (within
uvicorn's own 10 s grace); a turn still running then is cancelled ("the server is stopping"),
its partial reply persisted and the session paused, as for a client that left with ``pause``,
and the stream ends with ``cancelled``: a clean end of the response instead of a connection
cut mid-body when the grace runs out.

If the client disconnects: with ``on_disconnect: pause`` the turn is cancelled (a tool call
it cut short gets the result "cancelled: the client disconnected" before the turn ends), the
partial reply is persisted and the session paused (the next turn makes it active again);
with ``continue`` the turn finishes in the background and is persisted (status ``running``
meanwhile, then ``active``). A request that runs no loop of its own (its message was steered
into the running one, which its own caller owns, or was answered already) has no policy: a
client that leaves it only stops waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent

from duragent.core.attachments import Attachment
from duragent.core.messages import Usage
from duragent.core.snapshot import SessionStatus
from duragent.gateways.http.api.attachments import attachment_views, reply_file_views
from duragent.gateways.http.api.cut_turns import (
    TURN_INTERRUPTED,
    interrupted_detail,
    interrupted_fields,
    lost_to,
    taken_over_detail,
)
from duragent.gateways.http.api.stream_queue import OpenStreams, QueueSink, Stopping
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.observability.logctx import current, log_context
from duragent.turns import (
    CLIENT_LEFT,
    AwaitingApproval,
    Complete,
    Duplicate,
    Failed,
    Incoming,
    Interruption,
    TurnResult,
    TurnRunner,
    Waited,
)

__all__ = [
    "STOP_GRACE_SECONDS",
    "TURN_HEADER",
    "OpenStreams",
    "QueueSink",
    "StreamWire",
    "stream_turn",
]

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 5.0
TURN_HEADER = "X-Duragent-Turn"
"""The response header naming the turn a request ran (also in the log lines it caused)."""
SERVER_STOPPING = "the server is stopping"
"""Why a streaming turn was cancelled when the server stopped (the cancel message)."""


def _failed(
    message: str, message_id: str | None = None, fields: dict[str, Any] | None = None
) -> list[ServerSentEvent]:
    """A failed turn ends as ``error`` then ``done``: a client waiting for ``done`` never hangs.

    ``fields`` are more members of ``error`` (a cut turn's ``code``, ``tool_calls``…).
    """
    payload = {"message_id": message_id, "status": "error", "usage": Usage().to_dict()}
    return [
        ServerSentEvent(data=json.dumps({"message": message, **(fields or {})}), event="error"),
        ServerSentEvent(data=json.dumps(payload), event="done"),
    ]


def _done(result: TurnResult) -> list[ServerSentEvent]:
    """The last events of a turn that ended (``status`` is the outcome's wire name)."""
    payload: dict[str, Any] = {"message_id": None, "status": result.status}
    match result:
        case Failed(content=content):
            return _failed(content)
        case Complete(message_id=message_id, usage=usage, interruption=cut, attachments=files):
            payload.update(message_id=message_id, usage=usage.to_dict())
            if cut is not None:
                payload["interruption"] = cut.to_dict()
            if files:  # what ``send_file`` attached, with the path of its bytes
                payload["attachments"] = reply_file_views(result.session_id, files)
        case AwaitingApproval(usage=usage, call_id=call_id, command=command):
            payload.update(usage=usage.to_dict(), call_id=call_id, command=command)
        case Duplicate(interruption=Interruption(reply=str(reply)) as cut):  # cut, went on
            token = ServerSentEvent(data=json.dumps({"content": reply}), event="token")
            payload.update(message_id=cut.message_id, status="complete")
            payload.update(usage=Usage().to_dict(), interruption=cut.to_dict())
            return [token, ServerSentEvent(data=json.dumps(payload), event="done")]
        case Duplicate(interruption=Interruption() as cut):  # cut, never answered
            return _failed(interrupted_detail(cut), fields=interrupted_fields(cut))
        case Duplicate():  # answered: its reply went to its first request
            payload["usage"] = Usage().to_dict()
    return [ServerSentEvent(data=json.dumps(payload), event="done")]


class StreamWire:
    """How a streamed turn is written: duragent's named events, or OpenAI's chunks.

    ``openai.stream.ChunkWire`` is the other one. The lifecycle (the turn's task, a client
    that leaves, a server that stops) is the hard part and exists once, in
    :func:`stream_turn`; a wire only says what goes on the wire.
    """

    def sink(self) -> QueueSink:
        """The sink the turn reports its progress to (it puts events on its queue)."""
        return QueueSink()

    def opening(
        self, turn_id: str, attachments: Sequence[dict[str, Any]] = ()
    ) -> list[ServerSentEvent]:
        """The first events: ``start`` naming the turn.

        With the message's attachments, if it has any, as history shows them (with ``url``).
        """
        data: dict[str, Any] = {"turn_id": turn_id}
        if attachments:
            data["attachments"] = list(attachments)
        return [ServerSentEvent(data=json.dumps(data), event="start")]

    def ending(self, result: TurnResult) -> list[ServerSentEvent]:
        """The last events of a turn that ended."""
        return _done(result)

    def failure(self, message: str) -> list[ServerSentEvent]:
        """The last events of a turn that raised."""
        return _failed(message)

    def taken_over(self, message: str, fields: dict[str, Any]) -> list[ServerSentEvent]:
        """The last events of a turn cut because this node lost its session (``cut_turns``)."""
        return _failed(message, fields=fields)

    def cancelled(self) -> list[ServerSentEvent]:
        """The last events of a turn the stopping server cancelled."""
        return [ServerSentEvent(data="{}", event="cancelled")]


_AFTER_DISCONNECT = {
    "pause": "the turn stops, its partial reply is kept and the session is paused",
    "continue": "the turn continues in the background",
    "": "the request runs no loop of its own, so it only stops waiting for one",
}


async def stream_turn(
    turns: TurnRunner,
    tasks: BackgroundTasks,
    session_id: str,
    content: str,
    *,
    keep_alive: float,
    streams: OpenStreams | None = None,
    wire: StreamWire | None = None,
    turn_id: str,
    message_key: str | None = None,
    agent: str | None = None,
    attachments: tuple[Attachment, ...] = (),
) -> EventSourceResponse:
    """The SSE response running one turn (its task, and any clean-up, owned by ``tasks``).

    The turn starts first and the response opens once its message is recorded
    (``TurnSink.opened``), which also says the session's agent and disconnect policy: no
    read of the session comes first (a streamed turn asks it twice, as a plain one, issue
    35). What the turn raised before that (no such session, an ended one, one of another
    agent than ``agent``, one another node owns: ``LeaseHeldError``, forwarded by the app)
    is raised here. A request cancelled while it waits leaves
    the turn running to its end (``tasks`` owns it).

    ``turn_id`` is named in the ``X-Duragent-Turn`` header and the opening event, and bound
    (with everything else ``log_context`` holds here, and the agent once known) to every log
    line the turn causes. ``message_key``: the message's idempotency key
    (``sessions.message_key``), if any. ``attachments``: what the message carries, kept in
    the session already (``uploads.keep_uploads``); the ``start`` event lists them.
    """
    chosen = wire if wire is not None else StreamWire()
    sink = chosen.sink()
    bound = {**current(), "session_id": session_id, "turn_id": turn_id}  # the caller's too
    open_streams = streams if streams is not None else OpenStreams()
    refused: list[BaseException] = []

    async def run() -> None:
        try:
            try:
                message = Incoming(
                    content, None, None, message_key, agent=agent, attachments=attachments
                )
                ticket = await turns.submit(session_id, message, Waited(sink=sink))
                result = await ticket  # this task owns the turn: cancelling it stops the turn
                events = chosen.ending(result)
            except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # also a library's panic, which is no Exception
                if not sink.is_open.is_set():
                    refused.append(exc)  # nothing was written: the request is refused
                    return
                events = _failure(chosen, sink, exc, message_key)
            for event in events:
                sink.queue.put_nowait(event)
        finally:
            sink.queue.put_nowait(None)

    with log_context(**bound):  # the task copies the context it is created in
        task = tasks.spawn(run(), name=f"stream-{session_id}")
    await _opened_or_ended(task, sink)
    if refused:
        raise refused[0]
    if sink.agent:
        bound["agent"] = sink.agent  # for the clean-up after a client left

    async def events() -> AsyncIterator[ServerSentEvent]:
        finished = False
        deadline: float | None = None
        open_streams.add(sink)
        try:
            for opening in chosen.opening(turn_id, attachment_views(session_id, attachments)):
                yield opening
            while True:
                if deadline is None:
                    item = await sink.queue.get()
                else:
                    try:
                        remaining = deadline - asyncio.get_running_loop().time()
                        item = await asyncio.wait_for(sink.queue.get(), max(0.0, remaining))
                    except TimeoutError:
                        await _server_stopped(turns, session_id, task, sink)
                        finished = True
                        for event in chosen.cancelled():
                            yield event
                        return
                if item is None:
                    finished = True
                    return
                if isinstance(item, Stopping):
                    if deadline is None:
                        deadline = asyncio.get_running_loop().time() + STOP_GRACE_SECONDS
                    continue
                # One loop turn per event: a burst of queued events is otherwise written
                # without one, so a client that left is noticed only after the burst, and
                # asyncio logs every write past the fifth to the lost connection (84 lines
                # for one disconnect). Given the turn, uvicorn sees the loss at once.
                await asyncio.sleep(0)
                yield item
        finally:
            open_streams.discard(sink)
            if not finished:
                log.info(
                    "stream %s: the client disconnected before the turn ended; %s",
                    session_id,
                    _AFTER_DISCONNECT.get(sink.on_disconnect, sink.on_disconnect),
                )
                # The generator is being cancelled (anyio cancels every await in its scope),
                # so the clean-up runs as a task of its own.
                with log_context(**bound):
                    tasks.spawn(
                        _client_left(turns, tasks, session_id, task, sink),
                        name=f"stream-{session_id}-client-left",
                    )

    return EventSourceResponse(
        events(), ping=int(max(1, keep_alive)), send_timeout=30, headers={TURN_HEADER: turn_id}
    )


async def _opened_or_ended(task: asyncio.Task[None], sink: QueueSink) -> None:
    """Wait until the turn's message is recorded (``sink`` was told) or its task ended."""
    opened = asyncio.ensure_future(sink.is_open.wait())
    try:
        await asyncio.wait((task, opened), return_when=asyncio.FIRST_COMPLETED)
    finally:
        opened.cancel()


def _failure(
    wire: StreamWire, sink: QueueSink, exc: BaseException, message_key: str | None
) -> list[ServerSentEvent]:
    """The last events of a turn that raised once its stream was open (or could open)."""
    with log_context(agent=sink.agent or None):  # the turn's own scope bound it, and ended
        owner = lost_to(exc)
        if owner is not None:  # another node took the session over mid-turn
            log.warning("stream turn cut: this node lost the session: %s", exc)
            return _taken_over(wire, owner, sink, message_key)
        log.exception("stream turn failed", exc_info=exc)
        return wire.failure(str(exc) or type(exc).__name__)


def _taken_over(
    wire: StreamWire, owner: str, sink: QueueSink, message_key: str | None
) -> list[ServerSentEvent]:
    """What a stream whose turn was cut by a take-over says: what ran, how to get the rest."""
    key = message_key.removeprefix("http:") if message_key else None
    recorded = bool(sink.calls or sink.partial)  # the model was called: the message is saved
    fields: dict[str, Any] = {
        "code": TURN_INTERRUPTED,
        "message_recorded": recorded,
        "idempotency_key": key,
        "owner": owner or None,
        "tool_calls": [call.to_dict() for call in sink.calls.values()],
    }
    return wire.taken_over(taken_over_detail(owner, sink.calls, key, recorded=recorded), fields)


async def _server_stopped(
    turns: TurnRunner, session_id: str, task: asyncio.Task[None], sink: QueueSink
) -> None:
    """The server stops and the turn is still running: cancel it, keep its partial reply."""
    log.info(
        "stream %s: the server is stopping and the turn has not ended; it is cancelled, its "
        "partial reply kept and the session paused",
        session_id,
    )
    task.cancel(SERVER_STOPPING)  # recorded as the result of a call it cut short
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await turns.interrupted(session_id, "".join(sink.partial))


async def _client_left(
    turns: TurnRunner,
    tasks: BackgroundTasks,
    session_id: str,
    task: asyncio.Task[None],
    sink: QueueSink,
) -> None:
    """What a client that left does to the turn: the policy ``opened`` said last."""
    if task.done() or sink.on_disconnect == "":  # no loop of its own: only stop waiting
        return
    if sink.on_disconnect == "continue":
        await turns.set_status(session_id, SessionStatus.RUNNING)

        def finished(_: asyncio.Task[None]) -> None:
            tasks.spawn(
                turns.set_status(session_id, SessionStatus.ACTIVE), name=f"stream-{session_id}-done"
            )

        task.add_done_callback(finished)  # the turn itself is already owned by ``tasks``
        return
    task.cancel(CLIENT_LEFT)  # the turn records this as the result of a call it cut short
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await turns.interrupted(session_id, "".join(sink.partial))
