"""Commands duragent writes to the fake gateway plugin, as the test reads and scripts them.

The child process is the one ``gateways.external`` runs; the commands are written with
duragent's own protocol encoder (``to_line``) and the answers read with its parser, so what
passes here is what the runtime and the plugin say to each other.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from duragent.gateways.external.protocol import (
    Command,
    CommandError,
    CommandOk,
    EditMessage,
    Ping,
    SendMedia,
    parse_event,
    to_line,
)
from duragent.testing.gateway_control import FakeChild, GatewayControl, SentMedia
from tests.testing.images import png


@dataclass
class Plugin:
    """A running fake gateway child: its control side, and its pipes."""

    child: FakeChild
    process: asyncio.subprocess.Process

    async def send(self, command: Command) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(to_line(command))
        await self.process.stdin.drain()

    async def event(self) -> object:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 120)
        return parse_event(line.decode())


@asynccontextmanager
async def plugin() -> AsyncIterator[Plugin]:
    async with GatewayControl() as control:
        run = control.command()
        process = await asyncio.create_subprocess_exec(
            run["command"],
            *run["args"],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            running = Plugin(await control.child(), process)
            await running.event()  # ready
            yield running
        finally:
            assert process.stdin is not None
            process.stdin.close()
            assert await asyncio.wait_for(process.wait(), 120) == 0


def base64_media(data: bytes, mime_type: str, filename: str | None = None) -> dict[str, object]:
    media: dict[str, object] = {
        "source": "base64",
        "data": base64.b64encode(data).decode(),
        "mime_type": mime_type,
    }
    if filename is not None:
        media["filename"] = filename
    return media


async def test_a_file_sent_is_recorded_decoded_and_acknowledged_with_a_message_id() -> None:
    chart = png(30, 20)
    async with plugin() as gateway:
        await gateway.send(
            SendMedia("r1", "42", base64_media(chart, "image/png", "chart.png"), caption="chart")
        )
        await gateway.send(
            SendMedia("r2", "7", {"source": "url", "url": "https://example.org/a.pdf"})
        )
        first, second = await gateway.event(), await gateway.event()
        assert isinstance(first, CommandOk)
        assert isinstance(second, CommandOk)
        assert (first.request_id, first.message_id) == ("r1", "g1")
        assert (second.request_id, second.message_id) == ("r2", "g2")
        (media,) = gateway.child.sent_media("42")
        assert media == SentMedia(
            "r1", "42", "base64", "image/png", "chart.png", "chart", chart, None
        )
        linked = gateway.child.sent_media("7")[0]
        assert (linked.source, linked.url, linked.data) == (
            "url",
            "https://example.org/a.pdf",
            None,
        )
        answer = await gateway.child.answer("r2")
        assert answer == {"type": "command_ok", "request_id": "r2", "message_id": "g2"}


async def test_a_refusal_scripted_for_sends_of_files_skips_other_commands() -> None:
    async with plugin() as gateway:
        await gateway.child.refuse("rate_limited", "slow down", command="send_media", times=2)
        await gateway.send(Ping("p1"))
        media = base64_media(b"OggS", "audio/ogg")
        await gateway.send(SendMedia("m1", "42", media))
        await gateway.send(SendMedia("m2", "42", media))
        await gateway.send(SendMedia("m3", "42", media))
        events = [await gateway.event() for _ in range(4)]
        assert [type(e).__name__ for e in events] == [
            "Pong",
            "CommandError",
            "CommandError",
            "CommandOk",
        ]
        refused = events[1]
        assert isinstance(refused, CommandError)
        assert (refused.request_id, refused.code, refused.message) == (
            "m1",
            "rate_limited",
            "slow down",
        )
        ok = events[3]
        assert isinstance(ok, CommandOk)
        assert ok.message_id == "g1"  # the refused ones were not sent
        assert (await gateway.child.answer("m2"))["type"] == "command_error"
        assert len(gateway.child.sent_media()) == 3  # refused commands are still recorded


async def test_a_medium_that_is_not_the_protocols_is_an_invalid_request() -> None:
    async with plugin() as gateway:
        await gateway.send(SendMedia("b1", "42", {"source": "file", "path": "/tmp/x"}))
        await gateway.send(
            SendMedia("b2", "42", {"source": "base64", "data": "***", "mime_type": "x/y"})
        )
        await gateway.send(EditMessage("e1", "42", "g9", "edited"))
        bad_source, bad_data, edited = [await gateway.event() for _ in range(3)]
        assert isinstance(bad_source, CommandError)
        assert (bad_source.code, bad_source.message) == (
            "invalid_request",
            "unknown media source 'file' (url or base64)",
        )
        assert isinstance(bad_data, CommandError)
        assert bad_data.message == "media 'data' is not base64"
        assert isinstance(edited, CommandOk)
        assert gateway.child.of_type("edit_message")[0]["content"] == "edited"
        with pytest.raises(ValueError, match="not a protocol medium"):
            gateway.child.sent_media()
