"""``duragent.llm._sse``: the lean stream decodes exactly what the SDK's decoder does, cheaper.

The SDK's own ``SSEDecoder`` is the reference: every input is cut at every position (and into
single bytes) and both must give the same events; the stream itself is read over real HTTP
from the scripted server (``test_openai_provider`` covers the provider's answers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from openai._streaming import SSEDecoder

from duragent.llm._sse import SSEEvents
from tests.work import calls_made

CASES = [
    b'data: {"a": 1}\n\ndata: {"b": 2}\n\n',
    b'data: {"a": 1}\r\n\r\ndata: [DONE]\r\n\r\n',
    b'data: {"a": 1}\r\rdata: x\r\r',
    b"data: one\ndata: two\n\n: a comment\n\nevent: thread.run\ndata: {}\n\n",
    b"event: ping\n\nid: 7\n\n\n\ndata:nospace\n\n",
    b"retry: 100\n\nretry: soon\n\nid: a\x00b\n\nfield-without-colon\n\n",
    b"event:\n\ndata:\n\n",
    'data: {"t": "héllo — ünïcode"}\n\n'.encode(),
    b"data: no end of line",
    b"\n\n\r\n\r",
]


def _reference(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    """The SDK's decoder (its async reader runs the same per-chunk code)."""
    return [(e.event, e.data) for e in SSEDecoder().iter_bytes(iter(chunks))]


def _lean(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    decoder = SSEEvents()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    decoder.finish()
    return events


def _cuts(data: bytes) -> Iterator[list[bytes]]:
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]


@pytest.mark.parametrize("data", CASES)
def test_the_lean_decoder_gives_the_sdks_events_however_the_bytes_are_cut(data: bytes) -> None:
    for chunks in _cuts(data):
        assert _lean(chunks) == _reference(chunks), chunks


def test_invalid_utf8_fails_as_the_sdk_fails() -> None:
    data = [b"data: \xff\xfe\n\n"]
    with pytest.raises(UnicodeDecodeError):
        _reference(data)
    with pytest.raises(UnicodeDecodeError):
        _lean(data)


def test_a_line_cut_into_many_pieces_is_joined_once() -> None:
    line = b"data: " + b"x" * 200_000 + b"\n\n"
    pieces = [line[i : i + 7] for i in range(0, len(line), 7)]
    assert _lean(pieces) == [(None, "x" * 200_000)]


def test_decoding_a_reply_costs_a_fraction_of_the_sdks_decoder() -> None:
    """A ~170-word reply, one event per word: the reason for the module.

    Counted in function calls (``tests/work.py``), which a busy machine does not change: 1,876
    against the SDK's 4,772 when written.
    """
    words = [f'data: {{"choices":[{{"delta":{{"content":"w{i} "}}}}]}}\n\n' for i in range(170)]
    chunks = [w.encode() for w in words]

    def work(decode: Callable[[list[bytes]], object]) -> int:
        return calls_made(lambda: decode(chunks))

    assert work(_lean) * 2 < work(_reference)
