"""The console in a real headless Chromium shows each front end's sessions as they are.

Issue 39: the overview listed Telegram and OpenAI-API sessions as "http" (the list read
fields its source never had), every session page showed a stray ``null`` (a missing panel
handed to the DOM as a value), and a call cancelled by a newer message read "approval: deny".
Sessions are made through every front end a test can reach: the HTTP API, the OpenAI-style
endpoint, Telegram (the fake Bot API) and Discord (the fake Discord). Each page is saved as a
screenshot under the test's ``tmp_path``; the assertions read the visible text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Locator, Page

from duragent.testing import FakeTelegram, Reply, ToolCallReply
from tests.gateways.discord.rig import discord_rig
from tests.gateways.http.api_fixtures import served
from tests.gateways.http.console.browser_support import Watched, browser, watched
from tests.gateways.telegram.rig import BOT
from tests.gateways.telegram.rig import TOKEN as TELEGRAM_TOKEN
from tests.polling import eventually

__all__ = ["browser", "watched"]  # fixtures, imported to be found

pytestmark = pytest.mark.asyncio(loop_scope="session")

BASH_TOOL = "  tools:\n    - type: builtin\n      name: bash\n"
ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
UNTRUE = re.compile(r"\b(null|undefined|NaN)\b")
"""What a value the script failed to check prints as."""


async def facts(scope: Locator) -> dict[str, str]:
    """The session's fields as shown in ``scope`` (each marked ``data-field``)."""
    shown: dict[str, str] = {}
    for cell in await scope.locator("[data-field]").all():
        shown[str(await cell.get_attribute("data-field"))] = (await cell.inner_text()).strip()
    return shown


async def page_text(page: Page, shot: Path) -> str:
    """The page's visible text then all its text (closed ``details`` too), once saved as a
    screenshot at ``shot``."""
    assert await page.screenshot(path=shot, full_page=True)  # the PNG, also written to ``shot``
    visible = await page.locator("body").inner_text()
    return visible + "\n" + str(await page.evaluate("document.body.textContent"))


async def test_every_front_ends_session_is_listed_as_its_own_page_shows_it(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    shots = tmp_path / "screenshots"
    shots.mkdir()
    async with FakeTelegram(token=TELEGRAM_TOKEN, bot_username=BOT) as tg:
        telegram = {"bot_token": TELEGRAM_TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        async with discord_rig(tmp_path, extra_gateways={"telegram": telegram}) as rig:
            http = rig.http
            new = (await http.post("/api/v1/sessions", json={"agent": "bot"})).json()
            talked = (await http.post("/api/v1/sessions", json={"agent": "bot"})).json()
            said = {"content": "hello over http"}
            await http.post(f"/api/v1/sessions/{talked['session_id']}/messages", json=said)
            asked = {"model": "bot", "messages": [{"role": "user", "content": "hi openai"}]}
            completion = await http.post("/v1/chat/completions", json=asked)
            tg.push_message(42, "hello from telegram", first_name="Ann")
            await rig.dc.push_message(1001, "hello from discord", rig.dc.owner)
            assert await eventually(lambda: len(tg.sent_messages(42)) == 1)
            assert await eventually(lambda: len(rig.dc.sent(1001)) == 1)
            assert await eventually(lambda: len(rig.runtime.tasks) == 0)
            expected = {
                new["session_id"]: "http",
                talked["session_id"]: "http",
                completion.headers["x-duragent-session"]: "openai",
                rig.runtime.registry.sessions_of_chat("telegram", "42")[0][1]: "telegram",
                rig.runtime.registry.sessions_of_chat("discord", "1001")[0][1]: "discord",
            }
            base = f"http://127.0.0.1:{rig.runtime.http_port}"
            await page.goto(base + "/ui")
            rows = page.locator("#sessions tr[data-session]")
            await page.wait_for_function(
                "n => document.querySelectorAll('#sessions tr[data-session]').length === n",
                arg=len(expected),
            )
            overview = await page_text(page, shots / "overview.png")
            assert not UNTRUE.findall(overview), overview
            listed = {}
            for row in await rows.all():
                listed[str(await row.get_attribute("data-session"))] = await facts(row)
            assert set(listed) == set(expected)
            for sid, front_end in expected.items():
                await page.goto(f"{base}/ui/sessions/{sid}")
                await page.locator("#chat").wait_for()
                shown = await page_text(page, shots / f"{front_end}-{sid}.png")
                assert not UNTRUE.findall(shown), (front_end, shown)
                assert listed[sid] == await facts(page.locator("#facts")), front_end
                assert listed[sid]["front_end"] == front_end
    assert listed[new["session_id"]]["chat"] == ""  # an API session has no chat
    by_front_end = {row["front_end"]: row for row in listed.values()}
    assert by_front_end["telegram"]["chat"] == "42 (dm)"
    assert by_front_end["discord"]["chat"] == "1001 (dm)"
    assert by_front_end["openai"]["chat"] == ""
    assert watched.errors == []


async def test_a_call_cancelled_by_a_newer_message_reads_cancelled_not_denied(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    async with served(tmp_path, tools=BASH_TOOL, policy=ASK) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        call = ToolCallReply(name="bash", arguments={"command": "echo x"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]), Reply(text="never mind then"))
        path = f"/api/v1/sessions/{sid}/messages"
        assert (await s.client.post(path, json={"content": "run"})).status_code == 202
        assert (await s.client.post(path, json={"content": "no, stop"})).status_code == 200
        await page.goto(f"http://127.0.0.1:{s.runtime.http_port}/ui/sessions/{sid}")
        await page.locator("#history .msg.assistant", has_text="never mind then").wait_for()
        shown = await page_text(page, tmp_path / "cancelled.png")
        label = await page.locator("#history .call").inner_text()
    assert "approval cancelled: a new message arrived first — echo x" in label
    assert "deny" not in label
    assert not UNTRUE.findall(shown), shown
    assert watched.errors == []
