"""Starting the Discord front end inside ``duragent serve``: what fails it, and what does not.

A rejected token, a token of the wrong shape, or an application without the Message Content
intent fails the Discord gateway with an error naming it and the fix, while HTTP (and
Telegram) keep serving and ``/readyz`` shows ``failed: …``. The token never reaches a log.
"""

from __future__ import annotations

import gc
import logging
import warnings
from pathlib import Path

import pytest

from duragent.testing import FakeTelegram, Reply
from tests.gateways.discord.rig import TOKEN, discord_rig
from tests.gateways.telegram.rig import TOKEN as TELEGRAM_TOKEN
from tests.gateways.telegram.rig import assert_never_logged, log_everything
from tests.polling import eventually

OTHER_TOKEN = "MTk5OTk5OTk5OTk5OTk5OTk5.GXyz98.zyxwvutsrqponmlkjihgfedcba9876543210ZY"


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_rejected_token_fails_the_gateway_but_not_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with discord_rig(tmp_path, fake_token=OTHER_TOKEN) as rig:
        assert await rig.state() == "failed: Discord rejected the bot token"
        assert await eventually(rig.is_ready), "the HTTP API never became ready"
        assert (await rig.http.get("/livez")).status_code == 200
        assert [c.status for c in rig.dc.calls("GET", "/users/@me")] == [401]
        assert rig.dc.gateway.identified == []
    assert any("gateways.discord" in m and "bot_token" in m for m in errors(caplog))
    assert_never_logged(caplog, TOKEN)
    assert_never_logged(caplog, OTHER_TOKEN)


async def test_a_token_of_the_wrong_shape_fails_before_asking_discord(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with discord_rig(tmp_path, token="paste-your-token-here") as rig:
        state = await rig.state()
        assert state.startswith("failed: gateways.discord.bot_token does not look like"), state
        assert rig.dc.calls() == []
    assert any("Developer Portal" in m for m in errors(caplog))


async def test_a_missing_message_content_intent_names_the_portal_switch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with discord_rig(tmp_path, message_content_allowed=False) as rig:
        assert await rig.state() == "failed: Discord refused the Message Content intent"
        assert await eventually(rig.is_ready), "the HTTP API never became ready"
        assert len(rig.dc.gateway.identified) == 1
        assert rig.dc.gateway.connected == 0
    assert any("gateways.discord" in m and "Message Content Intent" in m for m in errors(caplog)), (
        errors(caplog)
    )
    assert_never_logged(caplog, TOKEN)


async def test_telegram_keeps_serving_when_discord_fails(tmp_path: Path) -> None:
    async with FakeTelegram(token=TELEGRAM_TOKEN) as tg:
        telegram = {"bot_token": TELEGRAM_TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        async with discord_rig(
            tmp_path, message_content_allowed=False, extra_gateways={"telegram": telegram}
        ) as rig:
            states = (await rig.readyz())["gateways"]
            assert states["telegram"] == "running"
            assert states["discord"].startswith("failed: ")
            tg.push_message(42, "still there?", first_name="Ann")
            assert await eventually(lambda: tg.sent_messages(42) == ["re: still there?"])


async def test_a_served_bot_is_running_and_answers_a_direct_message(tmp_path: Path) -> None:
    async with discord_rig(tmp_path) as rig:
        assert await rig.state() == "running"
        rig.llm.enqueue(Reply(text="Hello from serve."))
        ann = rig.dc.owner
        await rig.dc.push_message(1001, "hi", ann)
        assert await eventually(lambda: len(rig.dc.sent(1001)) == 1)
        assert rig.dc.sent(1001)[0]["content"] == "Hello from serve."
        assert rig.runtime.registry.sessions_of_chat("discord", "1001") != []


@pytest.mark.parametrize("refusal", ["token", "intent"])
async def test_a_refused_start_leaves_no_connection_open(tmp_path: Path, refusal: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with discord_rig(
            tmp_path,
            fake_token=OTHER_TOKEN if refusal == "token" else None,
            message_content_allowed=refusal == "token",
        ) as rig:
            assert (await rig.state()).startswith("failed: ")
        del rig
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
