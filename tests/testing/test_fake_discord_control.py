"""The fake Discord driven from outside: call indexes and times, ``/_fake`` endpoints, the CLI.

A benchmark runs the fake in its own process and follows the bot's calls incrementally; a
restart campaign traces each call to the process that sent it by its time. The bot here is
plain REST (httpx with the bot token), as discord.py's requests are.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from duragent.config.gateways import DiscordConfig
from duragent.testing import FakeDiscord
from duragent.testing.fake_discord import DEFAULT_DISCORD_TOKEN

BOT = {"Authorization": f"Bot {DEFAULT_DISCORD_TOKEN}"}


async def send(dc: FakeDiscord, channel: int, content: str) -> None:
    async with httpx.AsyncClient(base_url=f"{dc.url}/api/v10", headers=BOT) as rest:
        answer = await rest.post(f"/channels/{channel}/messages", json={"content": content})
        answer.raise_for_status()


async def test_calls_are_numbered_and_stamped_so_a_reader_can_follow_them() -> None:
    async with FakeDiscord() as dc:
        before = time.monotonic()
        for text in ("one", "two", "three"):
            await send(dc, 10, text)
        calls = dc.calls()
        assert [c.index for c in calls] == [0, 1, 2]
        assert before <= calls[0].time <= calls[1].time <= calls[2].time <= time.monotonic()
        assert [c.body["content"] for c in dc.calls(since=1)] == ["two", "three"]
        assert dc.calls(since=3) == []


async def test_keep_calls_forgets_old_calls_but_not_their_numbers() -> None:
    async with FakeDiscord(keep_calls=2) as dc:
        for n in range(7):
            await send(dc, 10, f"m{n}")
        kept = dc.calls()
        assert 2 <= len(kept) <= 4
        assert kept[-1].index == 6
        assert [c.body["content"] for c in dc.calls(since=6)] == ["m6"]


async def test_another_process_can_write_as_a_user_and_read_the_calls_over_http() -> None:
    async with FakeDiscord() as dc, httpx.AsyncClient(base_url=dc.url) as http:
        pushed = await http.post("/_fake/message", json={"channel_id": 20, "content": "hi"})
        assert pushed.json()["reached"] == 0  # no bot connected: Discord delivers it nowhere
        assert dc.message(int(pushed.json()["id"]))["content"] == "hi"  # type: ignore[index]
        await send(dc, 20, "hello")
        (call,) = (await http.get("/_fake/calls", params={"since": 0})).json()
        assert (call["index"], call["path"], call["body"]) == (
            0,
            "/channels/20/messages",
            {"content": "hello"},
        )
        assert "answer" not in call
        (full,) = (await http.get("/_fake/calls", params={"answers": "1"})).json()
        assert full["answer"]["content"] == "hello"
        bad = await http.post("/_fake/message", json={"channel_id": "twenty", "content": "hi"})
        assert bad.status_code == 400
        assert "channel_id" in bad.json()["error"]


def test_the_cli_serves_the_fake_in_its_own_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "duragent.testing.fake_discord", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().split()[-1]
        info = httpx.get(f"{url}/_fake/info").json()
        assert (info["bot"]["username"], info["connected"]) == ("duragent_bot", 0)
        me = httpx.get(f"{url}/api/v10/users/@me", headers=BOT).json()
        assert me["bot"] is True
    finally:
        child.terminate()
        status = child.wait(120)
        if child.stdout is not None:
            child.stdout.close()
    assert status == 0


def test_the_default_token_passes_duragents_own_token_check() -> None:
    assert DiscordConfig(bot_token=DEFAULT_DISCORD_TOKEN).token_problem() is None
