"""A lean reader of a chat-completions event stream, for ``OpenAICompatibleProvider.stream``.

Why: a reply streams one event per token (or word), and the ``openai`` SDK's ``AsyncStream``
spends per event a line splitter and decoder in pure Python that build an object per line and
per event, then an ``is_mapping`` through ``typing`` and a ``process_data`` call. With replies
of ~1 KB (~170 events) that was most of the serving process's CPU per turn — more than the
whole rest of a Telegram or HTTP turn (``bench/gateways/telegram_cpu.py``; spec
``202611241730.telegram-turn-cost.md``).

``LeanStream`` is the SDK's ``AsyncStream`` (same construction by the SDK's client, same
response, close and drain) with ``__stream__`` replaced: the bytes are split into events
with ``bytes`` operations, one event at a time, and each event's data is parsed once. What it
yields and raises is what the SDK's stream yields and raises for the same bytes:

- lines end at CR, LF or CRLF; a line is decoded as UTF-8 (strictly, as the SDK does); an
  empty line dispatches the event when it has an ``event``, ``data``, ``id`` or ``retry``
  field; ``:`` starts a comment; ``data`` lines join with a newline; other fields are ignored;
- ``[DONE]`` ends the stream (an HTTP/1.1 body is drained for the connection's reuse);
- an event named ``thread.*`` is yielded as ``{"data": …, "event": …}`` (the SDK's legacy
  mode); ``error`` in a mapping raises ``openai.APIError`` with the SDK's message;
- a transport timeout while reading raises ``openai.APITimeoutError``, another request error
  ``openai.APIConnectionError``, as the SDK's ``_iter_events`` does.
"""

from __future__ import annotations

import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import anyio
import anyio.lowlevel
import httpx
import httpx2
import openai

__all__ = ["LeanStream", "SSEEvents"]

_TIMEOUTS = (httpx2.TimeoutException, httpx.TimeoutException)
_REQUEST_ERRORS = (httpx2.RequestError, httpx.RequestError, ssl.SSLError, anyio.EndOfStream)
_DRAIN_SECONDS = 0.1


class SSEEvents:
    """Incremental server-sent-events decoder: bytes in, ``(event, data)`` pairs out.

    The fields and the dispatch rule are the SDK's ``SSEDecoder.decode`` (the last event id
    is kept across events, as the SSE spec says, so once one was seen every empty line
    dispatches); only the splitting into lines is done with ``bytes`` operations.
    """

    __slots__ = ("_data", "_event", "_last_id", "_pending", "_retry", "_skip_lf")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the line in progress (no line end in it yet)
        self._skip_lf = False  # the last chunk ended with CR: an LF first in the next ends it
        self._event: str | None = None
        self._data: list[str] = []
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """The events completed by ``chunk``."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._skip_lf = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._pending:
            self._pending.append(lines[0])
            lines[0] = b"".join(self._pending)
        last = lines.pop()
        self._pending = [last] if last else []
        events = []
        for line in lines:
            event = self._line(line.decode("utf-8"))
            if event is not None:
                events.append(event)
        return events

    def finish(self) -> None:
        """The stream ended: a last line without its line end is decoded, never dispatched."""
        if self._pending:
            self._line(b"".join(self._pending).decode("utf-8"))
            self._pending = []

    def _line(self, line: str) -> tuple[str | None, str] | None:
        if not line:
            if not (self._event or self._data or self._last_id or self._retry is not None):
                return None
            event = (self._event or None, "\n".join(self._data))
            self._event, self._data, self._retry = None, [], None
            return event
        if line[0] == ":":
            return None
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            with contextlib.suppress(TypeError, ValueError):
                self._retry = int(value)
        return None


class LeanStream(openai.AsyncStream[object]):
    """The SDK's stream of plain JSON chunks, decoded by ``SSEEvents`` (module docstring)."""

    def __aiter__(self) -> AsyncIterator[object]:
        """The events themselves (the SDK wraps them in one more generator per stream)."""
        return self._iterator

    async def __stream__(self) -> AsyncIterator[object]:
        """One generator from bytes to chunks: each layer costs every token a resumption."""
        response = self.response
        options = self._options
        legacy = options is None or getattr(options, "stream_mode", "legacy") == "legacy"
        synthesize = options is not None and getattr(options, "synthesize_event_and_data", False)
        decoder = SSEEvents()
        reads = response.aiter_bytes()
        try:
            while True:
                try:
                    chunk = await anext(reads)
                except StopAsyncIteration:
                    decoder.finish()
                    return
                except _TIMEOUTS as err:
                    raise openai.APITimeoutError(request=response.request) from err
                except _REQUEST_ERRORS as err:
                    raise openai.APIConnectionError(request=response.request) from err
                for event, data in decoder.feed(chunk):
                    if data.startswith("[DONE]"):
                        if response.http_version == "HTTP/1.1":
                            await _drain(response)
                        return
                    parsed: Any = json.loads(data)
                    if legacy and event and event.startswith("thread."):
                        yield {"data": parsed, "event": event}
                        continue
                    if legacy and isinstance(parsed, Mapping) and parsed.get("error"):
                        raise _stream_error(response, parsed["error"])
                    yield {"data": parsed, "event": event} if synthesize else parsed
        finally:
            await response.aclose()


def _stream_error(response: httpx2.Response, error: Any) -> openai.APIError:
    """The SDK's ``APIError`` for an ``error`` object inside a 200 stream."""
    message = error.get("message") if isinstance(error, Mapping) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    return openai.APIError(message=message, request=response.request, body=error)


async def _drain(response: httpx2.Response) -> None:
    """What the SDK does at ``[DONE]`` on HTTP/1.1: read the rest of the body, for reuse.

    At most 0.1 s; the response is closed whatever happens.
    """
    if response.is_closed:
        return
    try:
        with anyio.move_on_after(_DRAIN_SECONDS):
            # the transport's bytes, as the SDK reads them (``aiter_raw`` refuses a body
            # already being read)
            async for _ in cast(AsyncIterator[bytes], response.stream):
                await anyio.lowlevel.checkpoint()
    except (*_REQUEST_ERRORS, httpx2.StreamError, httpx.StreamError):
        pass  # cleanup must not turn a complete answer into a failure
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()
