"""What a scripted fake LLM answers: replies, HTTP faults, and the record of each request.

The values here are wire-neutral. A ``Reply`` says *what* the model answers (text, tool calls,
usage) and *how* the bytes travel (delays, a malformed body, a connection cut); the OpenAI and
Anthropic renderers turn it into their own JSON and SSE. A ``Fault`` is an HTTP error answer;
its body is rendered in the error format of whichever endpoint was called, so one script can
drive either provider. Both convert to and from plain JSON so a script can be written to a file
for a server running in another process.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "FILLER_PIECE",
    "Fault",
    "Frame",
    "RecordedRequest",
    "Repeat",
    "Reply",
    "Responder",
    "ScriptItem",
    "ToolCallReply",
    "Wire",
    "expand_frames",
    "filler_frames",
    "item_from_json",
    "item_to_json",
    "load_script",
]

Wire = Literal["openai", "anthropic"]
"""Which API an endpoint speaks: ``/v1/chat/completions`` or ``/v1/messages``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallReply:
    """One tool call the fake model makes.

    ``arguments`` is sent verbatim when it is a string (so malformed JSON can be scripted) and
    JSON-encoded when it is a mapping. ``id`` defaults to a deterministic per-request id.
    ``filler_bytes`` streams that many ``x`` characters right before the last two characters
    of the arguments (the closing ``"}`` of a string value, as in ``{"command":"echo "}``),
    generated while sending: a hostile model's 40 MB argument costs the fake no memory.
    """

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None
    filler_bytes: int = 0

    @property
    def arguments_text(self) -> str:
        """The arguments as the JSON text a model would stream."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), separators=(",", ":"))

    @property
    def arguments_object(self) -> dict[str, Any]:
        """The arguments as an object (Anthropic's ``input``); ``{}`` when not a JSON object."""
        try:
            value = json.loads(self.arguments_text or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A successful (HTTP 200) answer, plus optional transport misbehaviour.

    Attributes:
        text: the assistant text; streamed as ``chunks`` (default: word by word).
        tool_calls: tool calls in order; several make one multi-call response.
        prompt_tokens: usage reported as prompt / input tokens.
        completion_tokens: usage reported as completion / output tokens (default: chunk count
            plus one per tool call).
        finish_reason: OpenAI vocabulary (``stop``, ``tool_calls``, ``length``); Anthropic
            answers use the matching ``stop_reason``. Default: ``tool_calls`` when calls exist.
        model: the model name echoed back (default: the requested model).
        chunks: explicit text pieces for streaming; must join to ``text``.
        argument_fragment_size: streamed tool arguments are split into pieces of this many
            characters, as real APIs send them.
        delay: seconds to wait before sending anything (to provoke client timeouts).
        chunk_delay: seconds between streamed events.
        malformed: send an unparsable body (plain answer) or first event (stream).
        cut_after: drop the connection early: after this many SSE events (stream), or after
            this many body bytes of a plain answer. ``0`` cuts right after the headers.
        stall_after: stop sending after this many SSE events but keep the connection open
            until the client gives up (a hung stream, to provoke mid-stream timeouts).
        stream_error: in a stream, replace everything from event ``stream_error_after`` on by
            this fault sent as an SSE error event (Anthropic ``event: error``, OpenAI
            ``data: {"error": ...}``), then end the stream cleanly — how both APIs report
            failures such as ``overloaded_error`` after they have answered 200.
        stream_error_after: how many normal events precede ``stream_error``.
        filler_bytes: stream this many more ``x`` characters of text after ``text`` (a huge
            reply), generated while sending (streams only).
        endless: after ``text``, stream ``x`` text forever, until the client leaves (streams
            only).
    """

    text: str = ""
    tool_calls: Sequence[ToolCallReply] = ()
    prompt_tokens: int = 10
    completion_tokens: int | None = None
    finish_reason: str | None = None
    model: str | None = None
    chunks: Sequence[str] | None = None
    argument_fragment_size: int = 8
    delay: float = 0.0
    chunk_delay: float = 0.0
    malformed: bool = False
    cut_after: int | None = None
    stall_after: int | None = None
    stream_error: Fault | None = None
    stream_error_after: int = 0
    filler_bytes: int = 0
    endless: bool = False

    def text_chunks(self) -> list[str]:
        """The pieces the text streams in: ``chunks`` or words with their trailing space."""
        if self.chunks is not None:
            return [c for c in self.chunks if c]
        words = self.text.split(" ")
        pieces = [w + " " for w in words[:-1]] + [words[-1]]
        return [p for p in pieces if p]

    def output_tokens(self) -> int:
        """Completion tokens to report."""
        if self.completion_tokens is not None:
            return self.completion_tokens
        return max(1, len(self.text_chunks()) + len(self.tool_calls))

    def openai_finish_reason(self) -> str:
        """``finish_reason`` in OpenAI's vocabulary."""
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    def argument_fragments(self, call: ToolCallReply) -> list[str]:
        """The streamed pieces of one call's arguments (at least one, possibly empty)."""
        text = call.arguments_text
        size = max(1, self.argument_fragment_size)
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """An HTTP error answer, rendered in the called API's error format.

    ``message``, ``error_type`` and ``code`` default to what the real API says for ``status``
    (``code="context_length_exceeded"`` selects each API's context-overflow wording). ``body``
    replaces the rendered body entirely (a mapping is sent as JSON, a string verbatim), and
    ``headers`` override the defaults; with ``status=200`` that makes a raw answer for quirks
    no ``Reply`` produces (a hand-written SSE body, an HTML page from a proxy).
    ``retry_after`` adds a ``Retry-After`` header in seconds; ``delay`` waits before answering.
    """

    status: int
    message: str | None = None
    error_type: str | None = None
    code: str | None = None
    body: Mapping[str, Any] | str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    delay: float = 0.0

    @classmethod
    def rate_limited(cls, retry_after: float | None = None) -> Fault:
        """429, optionally with a Retry-After hint in seconds."""
        return cls(status=429, retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500, retry_after: float | None = None) -> Fault:
        """A 5xx failure on the provider's side."""
        return cls(status=status, retry_after=retry_after)

    @classmethod
    def overloaded(cls) -> Fault:
        """Anthropic's 529 ``overloaded_error``."""
        return cls(status=529)

    @classmethod
    def unauthorized(cls, status: int = 401) -> Fault:
        """401 (bad key) or 403 (no permission)."""
        return cls(status=status)

    @classmethod
    def bad_request(cls, message: str = "invalid request") -> Fault:
        """A plain 400 the client cannot fix by retrying."""
        return cls(status=400, message=message)

    @classmethod
    def context_length_exceeded(cls) -> Fault:
        """400 saying the prompt does not fit the model's context window."""
        return cls(status=400, code="context_length_exceeded")

    def all_headers(self) -> dict[str, str]:
        """The headers to send, including ``retry-after`` when set."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.retry_after is not None:
            headers["retry-after"] = f"{self.retry_after:g}"
        return headers


ScriptItem = Reply | Fault
"""One scripted answer."""

FILLER_PIECE = 65536
"""Characters of filler per streamed event."""


@dataclass(frozen=True, slots=True)
class Repeat:
    """One SSE event sent ``count`` times (``None``: until the client leaves), built once."""

    frame: bytes
    count: int | None


Frame = bytes | Repeat
"""An SSE event, or one repeated: how hostile answers stay cheap for the fake to send."""


def filler_frames(make: Callable[[str], bytes], total: int) -> list[Frame]:
    """``total`` filler characters as events built by ``make`` (64 KiB of ``x`` each)."""
    frames: list[Frame] = []
    if total >= FILLER_PIECE:
        frames.append(Repeat(make("x" * FILLER_PIECE), total // FILLER_PIECE))
    if total % FILLER_PIECE:
        frames.append(make("x" * (total % FILLER_PIECE)))
    return frames


def expand_frames(frames: Sequence[Frame]) -> Iterator[bytes]:
    """The events one by one, repeats unrolled lazily."""
    for frame in frames:
        if isinstance(frame, bytes):
            yield frame
        elif frame.count is None:
            while True:
                yield frame.frame
        else:
            for _ in range(frame.count):
                yield frame.frame


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """A request the fake server received, for assertions on what the client sent.

    Attributes:
        index: 0-based order of arrival.
        method: HTTP method.
        path: URL path (without query).
        headers: request headers, names lower-cased.
        body: the parsed JSON body, or ``None`` when it was not JSON.
        raw: the body bytes as received.
        wire: which API the path belongs to.
    """

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    raw: bytes
    wire: Wire

    @property
    def json(self) -> dict[str, Any]:
        """The body as a JSON object (``{}`` when it was not one)."""
        return self.body if isinstance(self.body, dict) else {}

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed answer."""
        return bool(self.json.get("stream"))

    def to_json(self) -> dict[str, Any]:
        """A JSON-friendly form (the raw bytes are omitted)."""
        return {
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
            "wire": self.wire,
        }


Responder = Callable[[RecordedRequest], ScriptItem | Awaitable[ScriptItem]]
"""Computes the answer from the request (sync or async); used instead of a fixed queue."""


def item_to_json(item: ScriptItem) -> dict[str, Any]:
    """A script item as plain JSON (``kind`` says which)."""
    data = asdict(item)
    data["kind"] = "reply" if isinstance(item, Reply) else "fault"
    return data


def item_from_json(data: Mapping[str, Any]) -> ScriptItem:
    """Parse ``item_to_json`` output or a hand-written item.

    ``kind`` may be omitted: an item with a ``status`` is a ``Fault``, anything else a
    ``Reply``. Tool calls are objects with ``name``, ``arguments`` and optional ``id``.
    Unknown keys raise ``TypeError`` so a typo in a script file is not silently ignored.
    """
    fields = dict(data)
    kind = fields.pop("kind", "fault" if "status" in fields else "reply")
    if kind == "fault":
        return Fault(**fields)
    if kind != "reply":
        raise ValueError(f"unknown script item kind {kind!r}")
    calls = fields.pop("tool_calls", ())
    chunks = fields.pop("chunks", None)
    stream_error = fields.pop("stream_error", None)
    return Reply(
        tool_calls=tuple(ToolCallReply(**c) for c in calls),
        chunks=tuple(chunks) if chunks is not None else None,
        stream_error=Fault(**stream_error) if stream_error is not None else None,
        **fields,
    )


def load_script(path: Path) -> list[ScriptItem]:
    """Script items from a JSON file holding a list (see ``item_from_json``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of script items")
    return [item_from_json(item) for item in data]
