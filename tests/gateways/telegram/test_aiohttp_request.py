"""``AiohttpRequest``: python-telegram-bot's requests over aiohttp, on the wire as PTB sends them.

Against a real aiohttp server on loopback that echoes what it received.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from telegram import Bot, InputFile
from telegram.error import NetworkError, TimedOut
from telegram.request import RequestData
from telegram.request._requestparameter import RequestParameter

from duragent.gateways.telegram.aiohttp_request import AiohttpRequest

TOKEN = "123456:" + "A" * 35
RELEASE = web.AppKey("release", asyncio.Event)


async def echo(request: web.Request) -> web.Response:
    """Answer as the Bot API would, with what arrived as the result."""
    if request.content_type.startswith("multipart/"):
        parts: dict[str, object] = {}
        async for part in await request.multipart():
            assert not isinstance(part, type(None))
            data = await part.read()  # type: ignore[union-attr]
            name = part.name  # type: ignore[union-attr]
            filename = getattr(part, "filename", None)
            parts[str(name)] = {"file": filename, "bytes": len(data)} if filename else data.decode()
        got: object = parts
    else:
        got = dict(await request.post())
    result = {
        "content_type": request.content_type,
        "agent": request.headers.get("User-Agent", ""),
        "got": got,
    }
    return web.json_response({"ok": True, "result": result})


async def get_me(request: web.Request) -> web.Response:
    me = {"id": 123456, "is_bot": True, "first_name": "Echo", "username": "echo_bot"}
    return web.json_response({"ok": True, "result": me})


SLOW_SEEN = asyncio.Event()


async def slow_echo(request: web.Request) -> web.Response:
    """``echo``, answered a moment after it arrived (a send the stop finds under way)."""
    SLOW_SEEN.set()
    await asyncio.sleep(0.3)
    return await echo(request)


async def slow(request: web.Request) -> web.Response:
    await request.app[RELEASE].wait()  # answered only at teardown
    return web.json_response({"ok": True, "result": True})


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    release = app[RELEASE] = asyncio.Event()
    app.router.add_post(f"/bot{TOKEN}/getMe", get_me)
    app.router.add_post(f"/bot{TOKEN}/echo", echo)
    app.router.add_post(f"/bot{TOKEN}/slow", slow)
    app.router.add_post(f"/bot{TOKEN}/slowecho", slow_echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/bot"
    release.set()
    await runner.cleanup()


async def test_parameters_are_form_encoded_as_ptb_sends_them(server: str) -> None:
    async with Bot(TOKEN, base_url=server, request=AiohttpRequest()) as bot:
        result = await bot.do_api_request("echo", api_kwargs={"chat_id": 42, "text": "héllo & bye"})
    assert isinstance(result, dict)
    assert result["content_type"] == "application/x-www-form-urlencoded"
    assert result["got"] == {"chat_id": "42", "text": "héllo & bye"}
    assert result["agent"] == AiohttpRequest.USER_AGENT


async def test_a_file_is_uploaded_as_multipart(server: str) -> None:
    upload = InputFile(b"\x89PNG fake image bytes", filename="chart.png")
    async with Bot(TOKEN, base_url=server, request=AiohttpRequest()) as bot:
        result = await bot.do_api_request("echo", api_kwargs={"chat_id": 7, "photo": upload})
    assert isinstance(result, dict)
    assert result["content_type"] == "multipart/form-data"
    assert result["got"]["chat_id"] == "7"
    assert result["got"]["photo"] == {"file": "chart.png", "bytes": 21}


async def test_a_slow_answer_is_ptbs_timed_out(server: str) -> None:
    async with Bot(TOKEN, base_url=server, request=AiohttpRequest(read_timeout=0.2)) as bot:
        with pytest.raises(TimedOut):
            await bot.do_api_request("slow")


async def test_nobody_listening_is_ptbs_network_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nobody listens
    bot = Bot(TOKEN, base_url=f"http://127.0.0.1:{port}/bot", request=AiohttpRequest())
    with pytest.raises(NetworkError):
        await bot.initialize()
    await bot.shutdown()


async def test_a_bot_on_it_talks_to_the_fake_telegram() -> None:
    from duragent.testing import FakeTelegram

    async with FakeTelegram(token=TOKEN) as tg:
        bot = Bot(TOKEN, base_url=f"{tg.url}/bot", request=AiohttpRequest())
        async with bot:
            sent = await bot.send_message(1001, "hi <b>there</b>", parse_mode="HTML")
            me = bot.bot
    assert me.username == tg.bot_username
    assert sent.text == "hi there"
    assert tg.sent_messages(1001)[-1] == "hi there"


async def test_shutting_down_lets_a_request_in_flight_finish_and_refuses_new_ones(
    server: str,
) -> None:
    """A graceful stop never cuts a send under way: the Bot API may have taken it already,
    and a send cut there is neither known as sent nor safe to send again (it would arrive
    twice after the restart). A request made once the stop began is refused at once."""
    request = AiohttpRequest()
    await request.initialize()
    sent = RequestData([RequestParameter("text", "sent", None)])
    in_flight = asyncio.ensure_future(request.post(f"{server}{TOKEN}/slowecho", sent))
    await SLOW_SEEN.wait()  # the server has it
    closing = asyncio.ensure_future(request.shutdown())
    await asyncio.sleep(0)
    with pytest.raises(NetworkError, match="not initialized"):  # PTB's name for it
        await request.post(f"{server}{TOKEN}/echo", RequestData([]))
    result = await in_flight
    await closing
    assert isinstance(result, dict)
    assert result["got"] == {"text": "sent"}
