"""Attachments users send through the fake Discord, read by a real ``discord.Client``.

discord.py parses a message's attachments and ``Attachment.read()`` GETs their ``url`` (or
``proxy_url``); the fake serves both, signed as Discord's CDN links are, and counts the
downloads a gateway makes.
"""

from __future__ import annotations

import asyncio
import base64

import discord
import httpx
import pytest

from duragent.testing import FakeDiscord
from duragent.testing.discord_objects import Person
from tests.testing.discord_client import Listening
from tests.testing.images import png

CHANNEL = 200
ANN = Person(7, "ann", global_name="Ann")


async def test_discord_py_reads_an_image_attachment_from_the_fake(listening: Listening) -> None:
    dc = listening.dc
    picture = png(640, 480)
    photo = dc.attachment(picture, "cat photo.png", description="a cat")
    await dc.push_message(CHANNEL, "look", ANN, attachments=[photo])
    message = await asyncio.wait_for(listening.received.get(), 120)
    (attachment,) = message.attachments
    assert (attachment.filename, attachment.size) == ("cat photo.png", len(picture))
    assert (attachment.content_type, attachment.width, attachment.height) == ("image/png", 640, 480)
    assert attachment.description == "a cat"
    assert attachment.url.startswith(f"{dc.url}/attachments/{attachment.id}/")
    assert await attachment.read() == picture
    assert dc.attachment_downloads(attachment.id) == 1
    assert await attachment.read(use_cached=True) == picture  # the proxy_url
    assert dc.attachment_downloads(attachment.id) == 2


async def test_a_voice_message_is_flagged_as_discord_sends_it(listening: Listening) -> None:
    dc = listening.dc
    voice = dc.attachment(b"OggS-voice", "voice-message.ogg", voice_seconds=3.5)
    await dc.push_message(CHANNEL, "", ANN, attachments=[voice])
    message = await asyncio.wait_for(listening.received.get(), 120)
    (attachment,) = message.attachments
    assert attachment.is_voice_message()
    assert (attachment.duration, attachment.content_type) == (3.5, "audio/ogg")
    assert message.flags.voice
    assert await attachment.read() == b"OggS-voice"


async def test_a_failed_download_raises_in_discord_py_and_is_not_counted(
    listening: Listening,
) -> None:
    dc = listening.dc
    document = dc.attachment(b"%PDF-1.7 notes", "notes.pdf")
    assert document["content_type"] == "application/pdf"
    await dc.push_message(CHANNEL, "the notes", ANN, attachments=[document])
    (attachment,) = (await asyncio.wait_for(listening.received.get(), 120)).attachments
    dc.cdn.fail_next(1, status=503)
    with pytest.raises(discord.HTTPException):
        await attachment.read()
    assert dc.attachment_downloads(attachment.id) == 0
    assert await attachment.read() == b"%PDF-1.7 notes"
    assert (dc.cdn.file(attachment.id).downloads, dc.cdn.file(attachment.id).failed) == (1, 1)


async def test_a_link_without_its_signature_is_gone_as_on_discords_cdn() -> None:
    async with FakeDiscord() as dc, httpx.AsyncClient() as http:
        document = dc.attachment(b"hello", "a.txt")
        unsigned = document["url"].split("?", 1)[0]
        answer = await http.get(unsigned)
        assert answer.status_code == 404
        assert answer.text == "This content is no longer available."
        served = await http.get(document["url"])
        assert served.content == b"hello"
        assert served.headers["content-type"].startswith("text/plain")
        assert dc.attachment_downloads() == 1


async def test_another_process_sends_attachments_and_reads_downloads_over_http() -> None:
    async with FakeDiscord() as dc, httpx.AsyncClient(base_url=dc.url) as http:
        attachment = {"filename": "dot.png", "data_base64": base64.b64encode(png(2, 2)).decode()}
        body = {"channel_id": 20, "content": "", "attachments": [attachment]}
        pushed = (await http.post("/_fake/message", json=body)).json()
        sent = dc.message(int(pushed["id"]))
        assert sent is not None
        (made,) = sent["attachments"]
        assert (made["width"], made["height"]) == (2, 2)
        assert (await http.get(made["url"])).content == png(2, 2)
        counted = (await http.get("/_fake/downloads", params={"attachment_id": made["id"]})).json()
        assert counted == {"attachment_id": made["id"], "downloads": 1}
        bad = {"channel_id": 20, "content": "", "attachments": [{"data_base64": "AA=="}]}
        assert (await http.post("/_fake/message", json=bad)).status_code == 400
