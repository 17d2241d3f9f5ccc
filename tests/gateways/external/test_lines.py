"""A child's stdout as bounded lines: oversized skipped, ``\\r`` dropped, bad UTF-8 replaced."""

from __future__ import annotations

import asyncio

from duragent.gateways.external.lines import LineReader, Oversized


async def lines_of(data: bytes, *, max_bytes: int = 10) -> list[str | Oversized]:
    stream = asyncio.StreamReader()
    stream.feed_data(data)
    stream.feed_eof()
    reader = LineReader(stream, max_bytes=max_bytes)
    found: list[str | Oversized] = []
    while (line := await reader.next()) is not None:
        found.append(line)
    return found


async def test_lines_are_split_on_newlines_and_a_last_line_without_one_still_counts() -> None:
    assert await lines_of(b"a\nbb\n\nccc") == ["a", "bb", "", "ccc"]


async def test_a_carriage_return_before_the_newline_is_dropped() -> None:
    assert await lines_of(b"a\r\nb\r\n") == ["a", "b"]


async def test_a_line_over_the_cap_is_skipped_whole_and_reading_goes_on() -> None:
    assert await lines_of(b"ok\n" + b"x" * 25 + b"\nnext\n") == ["ok", Oversized(25), "next"]


async def test_a_line_exactly_at_the_cap_is_kept() -> None:
    assert await lines_of(b"y" * 10 + b"\n") == ["y" * 10]


async def test_an_oversized_last_line_without_a_newline_is_skipped() -> None:
    assert await lines_of(b"ok\n" + b"z" * 30) == ["ok", Oversized(30)]


async def test_bytes_that_are_not_utf8_are_replaced() -> None:
    assert await lines_of(b"\xffab\n") == ["\ufffdab"]


async def test_a_huge_line_arriving_in_pieces_never_holds_more_than_the_cap() -> None:
    stream = asyncio.StreamReader()
    reader = LineReader(stream, max_bytes=1024)
    for _ in range(100):
        stream.feed_data(b"q" * 65536)
    stream.feed_data(b"\nafter\n")
    stream.feed_eof()
    first = await reader.next()
    assert first == Oversized(100 * 65536)
    assert len(reader._buffer) < 2 * 65536 + 1024
    assert await reader.next() == "after"
