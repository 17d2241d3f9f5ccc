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


async def test_a_repeated_nonce_returns_the_first_message_and_creates_none() -> None:
    async with (
        FakeDiscord() as dc,
        httpx.AsyncClient(base_url=f"{dc.url}/api/v10", headers=BOT) as rest,
    ):
        once = {"content": "once", "nonce": "77", "enforce_nonce": True}
        first = (await rest.post("/channels/10/messages", json=once)).json()
        again = (await rest.post("/channels/10/messages", json=once)).json()
        loose = await rest.post("/channels/10/messages", json={**once, "enforce_nonce": False})
        assert again["id"] == first["id"]
        assert loose.json()["id"] != first["id"]  # not enforced: Discord posts it again
        assert [m["content"] for m in dc.sent(10)] == ["once", "once"]
        assert [c.repeated for c in dc.calls()] == [False, True, False]


async def test_faults_scripted_over_http_answer_5xx_or_drop_the_connection() -> None:
    async with (
        FakeDiscord() as dc,
        httpx.AsyncClient(base_url=dc.url) as http,
        httpx.AsyncClient(base_url=f"{dc.url}/api/v10", headers=BOT) as rest,
    ):
        path = "/channels/10/messages"
        for kind in ("server_error", "drop", "drop_after"):
            scripted = await http.post(
                "/_fake/fault", json={"method": "POST", "path": path, "kind": kind, "status": 503}
            )
            assert scripted.status_code == 200, scripted.text
        assert (await rest.post(path, json={"content": "a"})).status_code == 503
        for _ in range(2):
            try:
                await rest.post(path, json={"content": "b"})
            except httpx.HTTPError:
                pass
            else:
                raise AssertionError("the connection was not dropped")
        assert [m["content"] for m in dc.sent(10)] == ["b"]  # dropped after it was applied
        bad = await http.post("/_fake/fault", json={"method": "POST", "path": path, "kind": "x"})
        assert bad.status_code == 400


async def test_a_fault_on_a_path_ending_in_a_star_meets_the_next_edit_of_any_message() -> None:
    async with (
        FakeDiscord() as dc,
        httpx.AsyncClient(base_url=f"{dc.url}/api/v10", headers=BOT) as rest,
    ):
        posted = (await rest.post("/channels/10/messages", json={"content": "v1"})).json()
        dc.fail("PATCH", "/channels/10/messages/*", 502)
        edit = f"/channels/10/messages/{posted['id']}"
        assert (await rest.patch(edit, json={"content": "v2"})).status_code == 502
        assert (await rest.patch(edit, json={"content": "v3"})).status_code == 200
        assert dc.final_texts(10) == ["v3"]
