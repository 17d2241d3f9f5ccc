"""A media message through the fake gateway plugin, its file served by ``MediaFileServer``.

The child process is the one ``gateways.external`` runs; what it writes is parsed with
duragent's own protocol reader, so the event is one duragent takes, and the file at its
``url`` is fetched as duragent would fetch it, counted by the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest

from duragent.gateways.external.protocol import MessageReceived, parse_event
from duragent.testing.fake_gateway import MediaFileServer, media_message
from duragent.testing.gateway_control import FakeChild, GatewayControl
from tests.testing.images import png


@dataclass
class Plugin:
    """A running fake gateway child: its control, and the lines it writes to duragent."""

    child: FakeChild
    process: asyncio.subprocess.Process

    async def event(self) -> str:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 120)
        return line.decode()


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
            assert '"ready"' in await running.event()
            yield running
        finally:
            assert process.stdin is not None
            process.stdin.close()  # end of input: the child exits 0
            assert await asyncio.wait_for(process.wait(), 120) == 0


async def test_a_media_message_points_at_a_file_served_and_counted() -> None:
    picture = png(20, 10)
    async with MediaFileServer() as files, plugin() as gateway, httpx.AsyncClient() as http:
        url = files.add(picture, "holiday photo.png")
        event = media_message(
            "42", url, caption="our trip", message_id="m1", sender_id="42", mime_type="image/png"
        )
        await gateway.child.emit(event)
        received = parse_event(await gateway.event())
        assert isinstance(received, MessageReceived)
        assert (received.content.type, received.content.kind()) == ("media", "image")
        assert (received.content.url, received.content.as_text()) == (url, "our trip")
        answer = await http.get(url)
        assert answer.content == picture
        assert answer.headers["content-type"] == "image/png"
        assert files.downloads(url) == 1
        assert files.downloads() == 1


async def test_a_voice_note_without_a_caption_has_no_text() -> None:
    async with MediaFileServer() as files, plugin() as gateway:
        url = files.add(b"OggS-voice", "voice.oga", "audio/ogg")
        await gateway.child.emit(
            media_message("7", url, media_type="voice", message_id="v1", sender_id="7")
        )
        received = parse_event(await gateway.event())
        assert isinstance(received, MessageReceived)
        assert (received.content.kind(), received.content.as_text()) == ("voice", None)
        assert files.downloads(url) == 0


async def test_the_file_host_can_fail_once_and_links_can_expire() -> None:
    async with MediaFileServer() as files, httpx.AsyncClient() as http:
        url = files.add(b"%PDF-1.7", "notes.pdf")
        files.fail_next(1, status=502)
        assert (await http.get(url)).status_code == 502
        assert (await http.get(url)).content == b"%PDF-1.7"
        assert (files.file(url).downloads, files.file(url).failed) == (1, 1)
        files.expire(url)
        assert (await http.get(url)).status_code == 404
        assert (await http.get(f"{files.url}/media/999/none.txt")).status_code == 404
        assert files.downloads(url) == 1
        with pytest.raises(LookupError):
            files.downloads(f"{files.url}/media/999/none.txt")


def test_media_message_leaves_out_what_was_not_given() -> None:
    event = media_message("1", "http://h/f", message_id="a", sender_id="1", media_type="document")
    assert event["content"] == {"type": "media", "media_type": "document", "url": "http://h/f"}
    assert event["type"] == "message_received"
