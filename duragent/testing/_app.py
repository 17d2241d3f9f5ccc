"""The ASGI side of the fake LLM server: record each request, pick its answer, send the bytes.

Responses are written with raw ASGI ``send`` calls rather than starlette response classes so
that faults real networks produce can be reproduced exactly: a connection dropped after some
events (the app returns without finishing the body, and uvicorn closes the socket, which the
client sees as an incomplete chunked read), a truncated JSON body, or silence long enough to
trip a client timeout.

Every wait also watches for the client going away and for the server stopping, so a test that
timed out does not keep the server busy sleeping, and shutdown never waits on a script delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from duragent.testing import wire_anthropic, wire_openai
from duragent.testing.script import (
    Fault,
    Frame,
    RecordedRequest,
    Reply,
    ScriptItem,
    Wire,
    expand_frames,
)

__all__ = ["Chooser", "LLMEndpoint"]

_SHUTTING_DOWN = Fault(status=503, message="fake LLM server: shutting down")
"""Answered to requests still waiting out a scripted delay when the server stops."""

Chooser = Callable[[Scope, bytes, Wire], Awaitable[tuple[RecordedRequest, ScriptItem]]]
"""Records one request and returns it with the answer the script gives it."""


class LLMEndpoint:
    """One API endpoint (``/v1/chat/completions`` or ``/v1/messages``) as an ASGI app.

    Args:
        wire: which API this endpoint speaks.
        record_and_choose: stores the request and returns it with the scripted answer.
        closing: set when the server stops; pending waits end and streams are cut.
        served: called with the seconds each request took here, from its headers to the last
            byte of the answer (reading the body included): the model's own time.
    """

    def __init__(
        self,
        wire: Wire,
        record_and_choose: Chooser,
        closing: Callable[[], asyncio.Event],
        served: Callable[[float], None] = lambda seconds: None,
    ) -> None:
        self.wire: Wire = wire
        self._record_and_choose = record_and_choose
        self._closing = closing
        self._served = served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        try:
            await self._answer(scope, receive, send)
        finally:
            self._served(time.perf_counter() - started)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = await Request(scope, receive).body()
        recorded, item = await self._record_and_choose(scope, raw, self.wire)
        gone = asyncio.Event()
        watcher = asyncio.create_task(self._watch(receive, gone))
        try:
            if isinstance(item, Fault):
                await self._send_fault(send, item, gone)
            else:
                await self._send_reply(send, recorded, item, gone)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self, receive: Receive, gone: asyncio.Event) -> None:
        """Set ``gone`` when the client disconnects or the server starts closing."""
        closing = asyncio.create_task(self._closing().wait())
        disconnect = asyncio.create_task(self._wait_disconnect(receive))
        try:
            await asyncio.wait({closing, disconnect}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            disconnect.cancel()
            gone.set()

    @staticmethod
    async def _wait_disconnect(receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    @staticmethod
    async def _pause(seconds: float, gone: asyncio.Event) -> bool:
        """Wait ``seconds``; False when the client left or the server is stopping meanwhile."""
        if seconds > 0 and not gone.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await gone.wait()
        return not gone.is_set()

    async def _send_fault(self, send: Send, fault: Fault, gone: asyncio.Event) -> None:
        if not await self._pause(fault.delay, gone):
            fault = _SHUTTING_DOWN  # ignored by uvicorn when the client has already left
        if fault.body is None:
            render = wire_openai.error_body if self.wire == "openai" else wire_anthropic.error_body
            body = json.dumps(render(fault)).encode()
            content_type = "application/json"
        elif isinstance(fault.body, str):
            body = fault.body.encode()
            content_type = "text/plain; charset=utf-8"
        else:
            body = json.dumps(dict(fault.body)).encode()
            content_type = "application/json"
        headers = {"content-type": content_type, **fault.all_headers()}
        await _start(send, fault.status, headers, len(body))
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _send_reply(
        self, send: Send, recorded: RecordedRequest, reply: Reply, gone: asyncio.Event
    ) -> None:
        if not await self._pause(reply.delay, gone):
            await self._send_fault(send, _SHUTTING_DOWN, gone)
            return
        model = str(recorded.json.get("model") or "fake-model")
        if recorded.stream:
            await self._send_stream(send, recorded, reply, model, gone)
            return
        if self.wire == "openai":
            obj = wire_openai.completion_body(reply, request_index=recorded.index, model=model)
        else:
            obj = wire_anthropic.message_body(reply, request_index=recorded.index, model=model)
        body = json.dumps(obj).encode()
        if reply.malformed:
            body = body[: len(body) // 2]
        await _start(send, 200, {"content-type": "application/json"}, len(body))
        if reply.cut_after is not None:
            partial = body[: reply.cut_after]
            await send({"type": "http.response.body", "body": partial, "more_body": True})
            return  # incomplete body: uvicorn drops the connection
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _send_stream(
        self,
        send: Send,
        recorded: RecordedRequest,
        reply: Reply,
        model: str,
        gone: asyncio.Event,
    ) -> None:
        events: list[Frame]
        if self.wire == "openai":
            options = recorded.json.get("stream_options") or {}
            events = wire_openai.stream_events(
                reply,
                request_index=recorded.index,
                model=model,
                include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
            )
        else:
            events = wire_anthropic.stream_events(reply, request_index=recorded.index, model=model)
        if reply.stream_error is not None:
            wire = wire_openai if self.wire == "openai" else wire_anthropic
            error = wire.error_event(reply.stream_error)
            events = [*events[: reply.stream_error_after], error]
        first = events[0]
        if reply.malformed and isinstance(first, bytes):
            events[0] = first[: len(first) // 2].rstrip(b"\n") + b"\n\n"
        headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        await _start(send, 200, headers, None)
        for i, event in enumerate(expand_frames(events)):
            if reply.cut_after is not None and i >= reply.cut_after:
                return  # response left incomplete: uvicorn drops the connection
            if reply.stall_after is not None and i >= reply.stall_after:
                await gone.wait()  # hold the connection open until the client leaves
                return
            if i and not await self._pause(reply.chunk_delay, gone):
                return
            # A send to a client that left may not suspend: without a loop turn per event an
            # endless stream would spin forever and never see ``gone``, and each write past
            # the fifth to the lost connection would be logged by asyncio.
            await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _start(send: Send, status: int, headers: Mapping[str, str], length: int | None) -> None:
    pairs = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    if length is not None:
        pairs.append((b"content-length", str(length).encode()))
    await send({"type": "http.response.start", "status": status, "headers": pairs})
