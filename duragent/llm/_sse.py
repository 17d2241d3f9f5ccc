"""A lean reader of a chat-completions event stream, for ``OpenAICompatibleProvider.stream``.

Why: a reply streams one event per token (or word), and the ``openai`` SDK's ``AsyncStream``
spent per event a line splitter and decoder in pure Python that built an object per line and
per event, then an ``is_mapping`` through ``typing`` and a ``process_data`` call. With replies
of ~1 KB (~170 events) that was most of the serving process's CPU per turn — more than the
whole rest of a Telegram or HTTP turn (``bench/gateways/telegram_cpu.py``; spec
``202611241730.telegram-turn-cost.md``). The provider now posts through its own aiohttp
session (spec ``202612050800.openai-transport.md``), and ``chat_chunks`` reads the response
body straight from aiohttp's ``StreamReader``: one generator from bytes to chunks, since each
layer costs every token a resumption.

What it yields and raises is what the SDK's stream yielded and raised for the same bytes, as
the provider mapped it:

- lines end at CR, LF or CRLF; a line is decoded as UTF-8 (strictly, as the SDK does); an
  empty line dispatches the event when it has an ``event``, ``data``, ``id`` or ``retry``
  field; ``:`` starts a comment; ``data`` lines join with a newline; other fields are ignored;
- ``[DONE]`` ends the stream (the rest of the body is drained for the connection's reuse);
  each other event's data is parsed as JSON once;
- ``error`` in a JSON object is a failure inside a stream that had already answered 200: it
  raises the ``LLMError`` its ``type``/``code`` stands for (``status_for_error_type``);
- transport failures (``aiohttp.ClientError``, timeouts) are left to the provider to map.

Dropped with the SDK: its "legacy" wrapping of ``thread.*`` events (the Assistants API's, never
sent by a chat-completions endpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator
from typing import Any

import aiohttp

from duragent.errors import LLMError, LLMResponseError
from duragent.llm._http_errors import error_for_status, status_for_error_type

__all__ = ["SSEEvents", "chat_chunks", "stream_error"]

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


async def chat_chunks(content: aiohttp.StreamReader, provider: str) -> AsyncGenerator[Any, None]:
    """The JSON chunks of a chat-completions stream, up to ``[DONE]`` or the body's end."""
    decoder = SSEEvents()
    while True:
        chunk = await content.readany()
        if not chunk:
            decoder.finish()
            return
        for _event, data in decoder.feed(chunk):
            if data.startswith("[DONE]"):
                if not content.is_eof():
                    await _drain(content)
                return
            parsed: Any = json.loads(data)
            if isinstance(parsed, dict) and parsed.get("error"):
                raise stream_error(parsed["error"], provider)
            yield parsed


async def _drain(content: aiohttp.StreamReader) -> None:
    """Read what follows ``[DONE]`` (the chunked body's end), for the connection's reuse.

    Released before its end, a response's connection is closed, and the next call pays a
    new one (a quarter of streamed calls did against the fake server). At most 0.1 s, as the
    SDK drained; a failure here must not turn a complete answer into one.
    """
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            while await content.readany():
                pass


def stream_error(error: object, provider: str) -> LLMError:
    """The failure an ``error`` object inside a 200 stream stands for.

    Classified by its ``type``/``code`` as the same failure would have been as a plain answer;
    an ``error`` that is not an object says nothing to classify by (an unreadable response).
    """
    message = error.get("message") if isinstance(error, dict) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    if not isinstance(error, dict):
        return LLMResponseError(f"{provider}: unreadable response: {message}", provider=provider)
    code = str(error.get("code") or "")
    return error_for_status(
        status_for_error_type(code, str(error.get("type") or "")),
        f"{provider} stream error: {message}",
        provider=provider,
        details=(code,),
        http_status=0,
    )
