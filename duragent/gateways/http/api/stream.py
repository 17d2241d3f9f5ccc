"""``POST /api/v1/sessions/{id}/stream``: a turn as Server-Sent Events.

Events: ``start`` {} → ``token`` {content} … ``tool_call`` {call_id, name, arguments} →
``tool_result`` {call_id, success, content} → … → ``done`` {message_id, status, usage} or
``approval_required`` {call_id, command} then ``done``, or ``error`` {message}, or
``cancelled`` {} (as the reference's code names it) when the server stopped the turn.
Keep-alive comments every ``keep_alive_interval_seconds``. Tools run here exactly as in the
synchronous endpoint (the reference's stream never ran them).

When the server stops, an open stream gets ``STOP_GRACE_SECONDS`` to finish its turn (within
uvicorn's own 10 s grace); a turn still running then is cancelled ("the server is stopping"),
its partial reply persisted and the session paused, as for a client that left with ``pause``,
and the stream ends with ``cancelled``: a clean end of the response instead of a connection
cut mid-body when the grace runs out.

If the client disconnects: with ``on_disconnect: pause`` the turn is cancelled (a tool call
it cut short gets the result "cancelled: the client disconnected" before the turn ends), the
partial reply is persisted and the session paused (the next turn makes it active again);
with ``continue`` the turn finishes in the background and is persisted (status ``running``
meanwhile, then ``active``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent

from duragent.core.messages import ToolCall, Usage
from duragent.core.snapshot import SessionStatus
from duragent.gateways.http.api.cut_turns import (
    TURN_INTERRUPTED,
    interrupted_detail,
    interrupted_fields,
    lost_to,
    taken_over_detail,
)
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.observability.logctx import current, log_context
from duragent.turns import (
    CLIENT_LEFT,
    AwaitingApproval,
    CallOutcome,
    Complete,
    Duplicate,
    Failed,
    Interruption,
    TurnResult,
    TurnRunner,
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


class _Stopping:
    """The marker a stopping server puts in each open stream's queue."""


_STOPPING = _Stopping()


class QueueSink:
    """A TurnSink that turns progress into SSE events on a queue."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[ServerSentEvent | _Stopping | None] = asyncio.Queue()
        self.partial: list[str] = []
        self.calls: dict[str, CallOutcome] = {}
        """The turn's calls as this node saw them: ``ran``/``failed`` once their result came,
        ``interrupted`` until then (what a stream cut by a take-over reports)."""

    def _put(self, event: str, data: dict[str, Any]) -> None:
        self.queue.put_nowait(ServerSentEvent(data=json.dumps(data), event=event))

    async def token(self, text: str) -> None:
        """Forward a text delta."""
        self.partial.append(text)
        self._put("token", {"content": text})

    async def tool_call(self, call: ToolCall) -> None:
        """Forward a tool call."""
        self.partial.clear()  # text before a tool call is not the final reply
        self.calls[call.id] = CallOutcome(call.id, call.name, "interrupted")
        self._put("tool_call", {"call_id": call.id, "name": call.name, "arguments": call.arguments})

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Forward a tool result."""
        if (seen := self.calls.get(call_id)) is not None:
            self.calls[call_id] = CallOutcome(call_id, seen.name, "ran" if success else "failed")
        self._put("tool_result", {"call_id": call_id, "success": success, "content": content})

    async def approval_required(self, call_id: str, command: str) -> None:
        """Forward an approval request."""
        self._put("approval_required", {"call_id": call_id, "command": command})

    async def summary(self, round_: int, through_seq: int, messages: int) -> None:
        """Forward the marker of a summary written during this turn."""
        self._put("summary", {"round": round_, "through_seq": through_seq, "messages": messages})


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
        case Complete(message_id=message_id, usage=usage, interruption=cut):
            payload.update(message_id=message_id, usage=usage.to_dict())
            if cut is not None:
                payload["interruption"] = cut.to_dict()
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

    def opening(self, turn_id: str) -> list[ServerSentEvent]:
        """The first events: ``start`` naming the turn."""
        return [ServerSentEvent(data=json.dumps({"turn_id": turn_id}), event="start")]

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


class OpenStreams:
    """The streams being written, told when the server stops (no cost per event)."""

    def __init__(self) -> None:
        self._sinks: set[QueueSink] = set()
        self.stopping = False

    def add(self, sink: QueueSink) -> None:
        """Track ``sink`` (told at once if the server is already stopping)."""
        self._sinks.add(sink)
        if self.stopping:
            sink.queue.put_nowait(_STOPPING)

    def discard(self, sink: QueueSink) -> None:
        """Stop tracking ``sink``."""
        self._sinks.discard(sink)

    def server_stopping(self) -> None:
        """Tell every open stream that the server is stopping."""
        self.stopping = True
        for sink in self._sinks:
            sink.queue.put_nowait(_STOPPING)


_AFTER_DISCONNECT = {
    "pause": "the turn stops, its partial reply is kept and the session is paused",
    "continue": "the turn continues in the background",
}


def stream_turn(
    turns: TurnRunner,
    tasks: BackgroundTasks,
    session_id: str,
    content: str,
    *,
    on_disconnect: str,
    keep_alive: float,
    streams: OpenStreams | None = None,
    wire: StreamWire | None = None,
    turn_id: str,
    message_key: str | None = None,
) -> EventSourceResponse:
    """The SSE response running one turn (its task, and any clean-up, owned by ``tasks``).

    ``turn_id`` is named in the ``X-Duragent-Turn`` header and the opening event, and bound
    (with everything else ``log_context`` holds here) to every log line the turn causes.
    ``message_key``: the message's idempotency key (``sessions.message_key``), if any.
    """
    chosen = wire if wire is not None else StreamWire()
    sink = chosen.sink()
    bound = {**current(), "session_id": session_id, "turn_id": turn_id}  # the caller's too
    open_streams = streams if streams is not None else OpenStreams()

    async def run() -> None:
        try:
            try:
                result = await turns.run(
                    session_id, content, sink=sink, platform_message_id=message_key
                )
                events = chosen.ending(result)
            except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # also a library's panic, which is no Exception
                owner = lost_to(exc)
                if owner is not None:  # another node took the session over mid-turn
                    log.warning("stream turn cut: this node lost the session: %s", exc)
                    events = _taken_over(chosen, owner, sink, message_key)
                else:
                    log.exception("stream turn failed")
                    events = chosen.failure(str(exc) or type(exc).__name__)
            for event in events:
                sink.queue.put_nowait(event)
        finally:
            sink.queue.put_nowait(None)

    async def events() -> AsyncIterator[ServerSentEvent]:
        with log_context(**bound):  # the task copies the context it is created in
            task = tasks.spawn(run(), name=f"stream-{session_id}")
        finished = False
        deadline: float | None = None
        open_streams.add(sink)
        try:
            for opening in chosen.opening(turn_id):
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
                if isinstance(item, _Stopping):
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
                    _AFTER_DISCONNECT.get(on_disconnect, on_disconnect),
                )
                # The generator is being cancelled (anyio cancels every await in its scope),
                # so the clean-up runs as a task of its own.
                with log_context(**bound):
                    tasks.spawn(
                        _client_left(turns, tasks, session_id, task, sink, on_disconnect),
                        name=f"stream-{session_id}-client-left",
                    )

    return EventSourceResponse(
        events(), ping=int(max(1, keep_alive)), send_timeout=30, headers={TURN_HEADER: turn_id}
    )


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
    on_disconnect: str,
) -> None:
    if task.done():
        return
    if on_disconnect == "continue":
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
