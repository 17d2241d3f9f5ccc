"""Two serve processes ("nodes") on one fake Telegram and one fake Discord, told apart.

A cluster test gives node ``b`` the fakes' URL plus ``/n/b`` as its base URL and node ``a``
the plain one; the fakes serve both the same and record who made each call. The Telegram side
runs the real python-telegram-bot with the addresses duragent's own gateway derives from a
``base_url`` (``bot_api_base``), the Discord side the real discord.py pointed by duragent's
``use_api``, so the prefix forms tested are the ones a node really requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import discord
import httpx
import pytest
import telegram

from duragent.gateways.discord.endpoints import use_api
from duragent.gateways.telegram.service import bot_api_base
from duragent.testing import FakeDiscord
from duragent.testing.fake_discord import DEFAULT_DISCORD_TOKEN
from duragent.testing.fake_telegram import FakeTelegram
from duragent.testing.telegram_calls import RecordedCall
from duragent.testing.telegram_faults import FaultRule
from tests.polling import eventually
from tests.testing.images import png

pytestmark = pytest.mark.usefixtures("timedelta_periods")

CHAT = 42
CHANNEL = 10
BOT = {"Authorization": f"Bot {DEFAULT_DISCORD_TOKEN}"}


@asynccontextmanager
async def node_bot(tg: FakeTelegram, node: str | None) -> AsyncIterator[telegram.Bot]:
    """PTB's ``Bot`` as a node's Telegram gateway builds it (``base_url`` ``<url>/n/<node>``)."""
    base, files = bot_api_base(tg.url if node is None else f"{tg.url}/n/{node}")
    async with telegram.Bot(tg.token, base_url=base, base_file_url=files) as bot:
        yield bot


# -- Telegram -----------------------------------------------------------------------------------


async def test_a_call_under_a_node_prefix_is_answered_and_recorded_as_that_nodes(
    tg: FakeTelegram,
) -> None:
    async with node_bot(tg, "b") as bot_b, node_bot(tg, None) as bot_a:
        assert bot_b.base_url == f"{tg.url}/n/b/bot{tg.token}"
        me = await bot_b.get_me()
        sent = await bot_b.send_message(CHAT, "from b")
        await bot_a.send_message(CHAT, "from a")
    assert me.username == tg.bot_username
    assert sent.text == "from b"
    assert tg.sent_messages(CHAT) == ["from b", "from a"]
    assert [c.node for c in tg.calls("sendMessage")] == ["b", "a"]
    assert sorted(c.node for c in tg.calls("getMe")) == ["a", "b", "b"]  # starts, get_me


async def test_the_calls_read_over_http_carry_their_node_and_read_back_whole(
    tg: FakeTelegram,
) -> None:
    async with node_bot(tg, "b") as bot_b:
        await bot_b.send_message(CHAT, "hi")
    async with httpx.AsyncClient(base_url=tg.url) as http:
        found = (await http.get("/_fake/calls", params={"method": "sendMessage"})).json()
    assert [c["node"] for c in found] == ["b"]
    assert RecordedCall.from_json(found[0]) == tg.calls("sendMessage")[0]
    older = {k: v for k, v in found[0].items() if k != "node"}  # a fake from before nodes
    assert RecordedCall.from_json(older).node == "a"


async def test_a_wrong_token_under_a_node_prefix_is_refused_and_recorded_as_that_nodes(
    tg: FakeTelegram,
) -> None:
    async with httpx.AsyncClient(base_url=tg.url) as http:
        answer = await http.post("/n/c/bot1:wrong/getMe")
    assert answer.status_code == 401
    assert [(c.method, c.status, c.node) for c in tg.calls()] == [("getMe", 401, "c")]


async def test_a_file_downloaded_under_a_node_prefix_is_served_and_counted_as_that_nodes(
    tg: FakeTelegram,
) -> None:
    picture = png(64, 32)
    file_id = tg.push_document(CHAT, picture, "chart.png")["message"]["document"]["file_id"]
    async with node_bot(tg, "b") as bot_b:
        found = await bot_b.get_file(file_id)
        assert found.file_path is not None
        assert found.file_path.startswith(f"{tg.url}/n/b/file/bot{tg.token}/")
        assert bytes(await found.download_as_bytearray()) == picture
    assert (tg.downloads(file_id), tg.downloads(file_id, node="b")) == (1, 1)
    assert tg.downloads(node="a") == 0
    async with httpx.AsyncClient(base_url=tg.url) as http:
        counted = await http.get("/_fake/downloads", params={"file_id": file_id, "node": "b"})
    assert counted.json() == {"file_id": file_id, "downloads": 1, "node": "b"}


async def test_a_file_a_node_sends_is_recorded_as_that_nodes(tg: FakeTelegram) -> None:
    async with node_bot(tg, "b") as bot_b, node_bot(tg, None) as bot_a:
        await bot_b.send_document(CHAT, document=b"1,2\n", filename="b.csv")
        await bot_a.send_document(CHAT, document=b"3,4\n", filename="a.csv")
    assert [(f.file_name, f.node) for f in tg.sent_files(CHAT)] == [("b.csv", "b"), ("a.csv", "a")]
    async with httpx.AsyncClient(base_url=tg.url) as http:
        light = (await http.get("/_fake/sent_files", params={"data": "0"})).json()
    assert [f["node"] for f in light] == ["b", "a"]


async def test_a_telegram_fault_scripted_for_a_method_fires_for_a_prefixed_call(
    tg: FakeTelegram,
) -> None:
    tg.add_fault(FaultRule.server_failure(502, method="sendMessage", times=1))
    async with node_bot(tg, "b") as bot_b:
        with pytest.raises(telegram.error.NetworkError):
            await bot_b.send_message(CHAT, "lost")
    (call,) = tg.calls("sendMessage")
    assert (call.status, call.fault, call.node) == (502, "server_error", "b")


# -- Discord ------------------------------------------------------------------------------------


async def test_a_discord_rest_call_under_a_node_prefix_is_answered_and_recorded_as_that_nodes() -> (
    None
):
    async with FakeDiscord() as dc, httpx.AsyncClient(base_url=dc.url, headers=BOT) as http:
        posted = await http.post(
            f"/n/b/api/v10/channels/{CHANNEL}/messages", json={"content": "from b"}
        )
        await http.post(f"/api/v10/channels/{CHANNEL}/messages", json={"content": "from a"})
        gateway = (await http.get("/n/b/api/v10/gateway/bot")).json()
        plain = (await http.get("/api/v10/gateway/bot")).json()
        found = (await http.get("/_fake/calls")).json()
        assert posted.status_code == 200
        assert [m["content"] for m in dc.sent(CHANNEL)] == ["from b", "from a"]
        assert [(c.path, c.node) for c in dc.calls()] == [
            (f"/channels/{CHANNEL}/messages", "b"),
            (f"/channels/{CHANNEL}/messages", "a"),
            ("/gateway/bot", "b"),
            ("/gateway/bot", "a"),
        ]
        assert [c["node"] for c in found] == ["b", "a", "b", "a"]
        port = dc.port
    assert gateway["url"] == f"ws://127.0.0.1:{port}/n/b/gateway"  # b's websocket stays b's
    assert plain["url"] == f"ws://127.0.0.1:{port}/gateway"


async def test_a_discord_fault_scripted_on_a_path_fires_for_a_prefixed_request() -> None:
    path = f"/channels/{CHANNEL}/messages"
    async with FakeDiscord() as dc, httpx.AsyncClient(base_url=dc.url, headers=BOT) as http:
        dc.fail("POST", path, 503)
        dc.refuse("POST", path)
        dc.rate_limit("POST", path, 0.5)
        statuses = [
            (await http.post(f"/n/b/api/v10{path}", json={"content": "x"})).status_code
            for _ in range(4)
        ]
        assert statuses == [503, 403, 429, 200]
        assert [(c.path, c.node) for c in dc.calls()] == [(path, "b")] * 4
        assert dc.calls()[0].fault == "server_error"


async def identify(
    session: aiohttp.ClientSession, url: str
) -> tuple[aiohttp.ClientWebSocketResponse, dict[str, Any]]:
    """A gateway connection opened at ``url`` and identified, and READY's payload."""
    ws = await session.ws_connect(url)
    hello = await ws.receive_json(timeout=30)
    assert hello["op"] == 10
    await ws.send_json({"op": 2, "d": {"token": DEFAULT_DISCORD_TOKEN, "intents": 0}})
    ready = await ws.receive_json(timeout=30)
    assert ready["t"] == "READY"
    return ws, dict(ready["d"])


async def test_each_open_gateway_connection_is_attributed_to_its_node() -> None:
    async with FakeDiscord() as dc, aiohttp.ClientSession() as session:
        ws_url = f"ws://{dc.host}:{dc.port}"
        _ws_a, ready_a = await identify(session, f"{ws_url}/gateway")
        _ws_b, ready_b = await identify(session, f"{ws_url}/n/b/gateway")
        assert dc.connected_nodes() == ["a", "b"]
        assert ready_a["resume_gateway_url"] == f"{ws_url}/gateway"
        assert ready_b["resume_gateway_url"] == f"{ws_url}/n/b/gateway"
        async with httpx.AsyncClient(base_url=dc.url) as http:
            info = (await http.get("/_fake/info")).json()
        assert info["connected_nodes"] == ["a", "b"]
        await dc.disconnect()
        assert await eventually(lambda: dc.connected_nodes() == [])


async def test_discord_py_pointed_at_a_node_prefix_connects_and_resumes_as_that_node() -> None:
    async with FakeDiscord() as dc:
        await dc.add_channel(CHANNEL)
        restore = use_api(f"{dc.url}/n/b")  # as node b's Discord gateway does
        client = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.01)
        ready = asyncio.Event()

        @client.event
        async def on_ready() -> None:
            ready.set()

        try:
            await client.login(dc.token)
            running = asyncio.create_task(client.connect(reconnect=True))
            try:
                await asyncio.wait_for(ready.wait(), 120)
                assert dc.connected_nodes() == ["b"]
                channel = client.get_channel(CHANNEL)
                assert isinstance(channel, discord.TextChannel)
                await channel.send("hello")
                await dc.disconnect()  # discord.py resumes at READY's resume_gateway_url
                assert await eventually(lambda: dc.gateway.resumed == 1)
                assert await eventually(lambda: dc.connected_nodes() == ["b"])
            finally:
                await client.close()
                await asyncio.wait_for(running, 120)
        finally:
            restore()
        assert {c.node for c in dc.calls()} == {"b"}
        assert [m["content"] for m in dc.sent(CHANNEL)] == ["hello"]
