"""Files, edits and deletions the bot makes on the fake Discord, through a real ``discord.Client``.

discord.py sends files as multipart (``payload_json`` and ``files[n]``), edits with PATCH and
waits out a 429 itself; the fake records each file and edit, keeps the message as it now reads
and echoes the change on the gateway, as Discord does.
"""

from __future__ import annotations

import asyncio
import base64
from io import BytesIO

import discord
import httpx
import pytest

from duragent.testing import FakeDiscord
from duragent.testing.fake_discord import DEFAULT_DISCORD_TOKEN
from tests.polling import eventually
from tests.testing.discord_client import Listening
from tests.testing.images import png

CHANNEL = 200
CSV = b"day,temp\nmon,21\n"


async def text_channel(listening: Listening) -> discord.TextChannel:
    channel = listening.client.get_channel(CHANNEL)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def own_echo(listening: Listening) -> discord.Message:
    """The MESSAGE_CREATE of the bot's own message, as Discord echoes it."""
    return await asyncio.wait_for(listening.received.get(), 120)


async def test_a_message_with_files_is_recorded_with_their_bytes_and_names(
    listening: Listening,
) -> None:
    dc = listening.dc
    channel = await text_channel(listening)
    chart = png(320, 200)
    sent = await channel.send(
        "the chart and the data",
        files=[
            discord.File(BytesIO(chart), "chart.png", description="weekly chart"),
            discord.File(BytesIO(CSV), "temps.csv"),
        ],
    )
    assert [a.filename for a in sent.attachments] == ["chart.png", "temps.csv"]
    image = sent.attachments[0]
    assert (image.content_type, image.width, image.height) == ("image/png", 320, 200)
    assert image.description == "weekly chart"
    assert await image.read() == chart  # served by the fake's CDN
    assert sent.attachments[1].content_type is not None
    assert sent.attachments[1].content_type.startswith("text/csv")
    files = dc.sent_files(CHANNEL)
    assert [(f.filename, f.data, f.via) for f in files] == [
        ("chart.png", chart, "send"),
        ("temps.csv", CSV, "send"),
    ]
    assert {f.message_id for f in files} == {sent.id}
    assert files[0].content == "the chart and the data"
    assert files[0].description == "weekly chart"
    assert dc.sent_files(CHANNEL + 1) == []
    echoed = await own_echo(listening)
    assert [a.filename for a in echoed.attachments] == ["chart.png", "temps.csv"]


async def test_a_file_alone_needs_no_text_and_nothing_at_all_is_refused(
    listening: Listening,
) -> None:
    channel = await text_channel(listening)
    sent = await channel.send(file=discord.File(BytesIO(CSV), "temps.csv"))
    assert (sent.content, len(sent.attachments)) == ("", 1)
    with pytest.raises(discord.HTTPException) as refused:
        await channel.send("")
    assert refused.value.status == 400


async def test_files_over_the_upload_limit_are_too_large(listening: Listening) -> None:
    dc = listening.dc
    dc.uploads.upload_limit = 1000
    channel = await text_channel(listening)
    with pytest.raises(discord.HTTPException) as refused:
        await channel.send(file=discord.File(BytesIO(bytes(1001)), "big.bin"))
    assert (refused.value.status, refused.value.code) == (413, 40005)
    assert dc.sent_files() == []


async def test_edits_are_recorded_in_order_and_the_message_reads_as_the_last(
    listening: Listening,
) -> None:
    dc = listening.dc
    channel = await text_channel(listening)
    preview = await channel.send("Hel")
    other = await channel.send("another")
    await own_echo(listening)
    await preview.edit(content="Hello, wor")
    edited = await preview.edit(content="Hello, world!")
    assert edited.edited_at is not None
    assert [e["content"] for e in dc.edits(CHANNEL, preview.id)] == ["Hello, wor", "Hello, world!"]
    assert dc.edits(CHANNEL, other.id) == []
    kept = dc.message(preview.id)
    assert kept is not None
    assert kept["content"] == "Hello, world!"
    assert dc.final_texts(CHANNEL) == ["Hello, world!", "another"]
    assert [m["content"] for m in dc.sent(CHANNEL)] == ["Hel", "another"]  # as first sent

    def echoed_edit() -> bool:  # MESSAGE_UPDATE reached discord.py's message cache
        found = discord.utils.get(listening.client.cached_messages, id=preview.id)
        return found is not None and found.content == "Hello, world!"

    assert await eventually(echoed_edit)
    with pytest.raises(discord.HTTPException):
        await preview.edit(content="x" * 2001)


async def test_an_edit_can_add_and_drop_files(listening: Listening) -> None:
    dc = listening.dc
    channel = await text_channel(listening)
    sent = await channel.send("data", file=discord.File(BytesIO(CSV), "temps.csv"))
    chart = png(10, 10)
    edited = await sent.edit(
        content="data and chart",
        attachments=[*sent.attachments, discord.File(BytesIO(chart), "chart.png")],
    )
    assert [a.filename for a in edited.attachments] == ["temps.csv", "chart.png"]
    assert [(f.filename, f.via) for f in dc.sent_files(CHANNEL)] == [
        ("temps.csv", "send"),
        ("chart.png", "edit"),
    ]
    assert dc.sent_files(CHANNEL)[1].content == "data and chart"
    trimmed = await edited.edit(attachments=[edited.attachments[1]])
    assert [a.filename for a in trimmed.attachments] == ["chart.png"]
    assert len(dc.sent_files(CHANNEL)) == 2


async def test_a_429_on_an_edit_is_waited_out_by_discord_py_or_raised_when_too_long(
    listening: Listening,
) -> None:
    dc = listening.dc
    channel = await text_channel(listening)
    preview = await channel.send("Thinking")
    path = f"/channels/{CHANNEL}/messages/{preview.id}"
    dc.rate_limit("PATCH", path, 0.05)
    await preview.edit(content="Thought")
    assert [c.status for c in dc.calls("PATCH", path)] == [429, 200]
    assert [e["content"] for e in dc.edits(CHANNEL)] == ["Thought"]
    dc.rate_limit("PATCH", path, 45.0)
    with pytest.raises(discord.RateLimited) as limited:
        await preview.edit(content="Too soon")
    assert limited.value.retry_after == 45.0
    assert dc.final_texts(CHANNEL) == ["Thought"]


async def test_a_429_carries_discords_headers_beside_the_json() -> None:
    async with FakeDiscord() as dc:
        dc.rate_limit("PATCH", "/channels/5/messages/6", 2.5)
        headers = {"Authorization": f"Bot {DEFAULT_DISCORD_TOKEN}"}
        async with httpx.AsyncClient(base_url=f"{dc.url}/api/v10", headers=headers) as rest:
            answer = await rest.patch("/channels/5/messages/6", json={"content": "x"})
    assert answer.status_code == 429
    assert answer.json()["retry_after"] == 2.5
    assert answer.headers["Retry-After"] == "3"
    assert answer.headers["X-RateLimit-Remaining"] == "0"
    assert answer.headers["X-RateLimit-Reset-After"] == "2.500"
    assert answer.headers["X-RateLimit-Scope"] == "user"
    assert answer.headers["Via"]


async def test_a_deleted_preview_is_gone_and_recorded(listening: Listening) -> None:
    dc = listening.dc
    channel = await text_channel(listening)
    preview = await channel.send("half a rep")
    await channel.send("the whole reply")
    await preview.delete()
    assert dc.deleted(CHANNEL) == [preview.id]
    assert dc.final_texts(CHANNEL) == ["the whole reply"]
    with pytest.raises(discord.NotFound):
        await preview.edit(content="too late")


async def test_another_process_reads_files_edits_and_texts_over_http(
    listening: Listening,
) -> None:
    dc = listening.dc
    channel = await text_channel(listening)
    sent = await channel.send("data", file=discord.File(BytesIO(CSV), "temps.csv"))
    await sent.edit(content="the data")
    async with httpx.AsyncClient(base_url=dc.url) as http:
        (found,) = (await http.get("/_fake/sent_files", params={"channel_id": CHANNEL})).json()
        assert base64.b64decode(found["data_base64"]) == CSV
        assert (found["filename"], found["message_id"]) == ("temps.csv", sent.id)
        light = (await http.get("/_fake/sent_files", params={"data": "0"})).json()
        assert "data_base64" not in light[0]
        edits = (await http.get("/_fake/edits", params={"channel_id": CHANNEL})).json()
        assert [e["content"] for e in edits] == ["the data"]
        now = (await http.get("/_fake/final_texts", params={"channel_id": CHANNEL})).json()
        assert now == {"texts": ["the data"], "deleted": []}
        path = f"/channels/{CHANNEL}/messages/{sent.id}"
        limit = {"method": "PATCH", "path": path, "retry_after": [0.05]}
        assert (await http.post("/_fake/rate_limit", json=limit)).status_code == 200
        await sent.edit(content="again")
        assert [c.status for c in dc.calls("PATCH", path)][-2:] == [429, 200]
        bad = await http.get("/_fake/edits", params={"channel_id": "x"})
        assert bad.status_code == 400
