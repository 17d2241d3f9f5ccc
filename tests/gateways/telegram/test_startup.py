"""Starting the Telegram front end: a rejected token, and receiving updates by webhook.

A rejected token must not take ``duragent serve`` down (HTTP keeps serving, ``/readyz`` says
what failed) and must never be written to a log. Webhook mode registers with a secret and one
connection; the runtime's HTTP port then takes Telegram's POSTs, from any Host.
"""

from __future__ import annotations

import gc
import json
import logging
import warnings
from pathlib import Path

import pytest

from tests.gateways.telegram.rig import TOKEN, assert_never_logged, log_everything, telegram_rig
from tests.polling import eventually

OTHER_TOKEN = "654321:BBHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9"
HOOK = "https://example.com/tg/hook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
JSON = {"Content-Type": "application/json"}


async def test_a_rejected_token_fails_the_gateway_but_not_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with telegram_rig(tmp_path, fake_token=OTHER_TOKEN) as rig:
        assert await eventually(rig.is_ready), "the HTTP API never became ready"
        answer = await rig.http.get("/readyz")
        assert answer.status_code == 200, answer.text
        state = answer.json()["gateways"]["telegram"]
        assert state.startswith("failed: "), state
        assert TOKEN not in answer.text
        assert (await rig.http.get("/livez")).status_code == 200
    assert [c.status for c in rig.tg.calls("getMe")] == [401]
    assert rig.tg.calls("getUpdates") == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("gateways.telegram.bot_token" in m for m in errors), errors
    assert_never_logged(caplog)
    assert_never_logged(caplog, OTHER_TOKEN)


async def test_a_rejected_token_leaves_no_connection_open(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with telegram_rig(tmp_path, fake_token=OTHER_TOKEN) as rig:
            assert (await rig.readyz())["gateways"]["telegram"].startswith("failed: ")
        del rig
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


async def test_a_token_revoked_while_polling_fails_the_gateway_with_a_clear_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with telegram_rig(tmp_path) as rig:
        assert await eventually(lambda: rig.tg.polls_waiting > 0)
        rig.tg.token = OTHER_TOKEN  # @BotFather revoked it: every call is now 401

        async def failed() -> bool:
            return str((await rig.readyz())["gateways"]["telegram"]).startswith("failed: ")

        assert await eventually(failed), await rig.readyz()
        assert await rig.is_ready()  # HTTP still serves
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("gateways.telegram.bot_token" in m for m in errors), errors
    assert_never_logged(caplog)


def update_json(update_id: int, chat_id: int, text: str) -> bytes:
    message = {
        "message_id": 1,
        "date": 1_700_000_000,
        "chat": {"id": chat_id, "type": "private", "first_name": "Ann"},
        "from": {"id": chat_id, "is_bot": False, "first_name": "Ann"},
        "text": text,
    }
    return json.dumps({"update_id": update_id, "message": message}).encode()


async def test_webhook_mode_registers_with_a_secret_and_one_connection(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, webhook_url=HOOK) as rig:
        (registered,) = rig.tg.calls("setWebhook")
        assert rig.tg.calls("getUpdates") == []
        assert (await rig.readyz())["gateways"] == {"telegram": "running"}
    assert registered.params["url"] == HOOK
    assert int(registered.params["max_connections"]) == 1
    assert len(registered.params["secret_token"]) >= 32
    assert TOKEN not in registered.params["secret_token"]


async def test_a_webhook_post_with_the_secret_is_answered_through_telegram(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with telegram_rig(tmp_path, webhook_url=HOOK) as rig:
        secret = rig.tg.calls("setWebhook")[0].params["secret_token"]
        answer = await rig.http.post(
            "/tg/hook",
            content=update_json(10, 42, "hi by webhook"),
            headers={**JSON, SECRET_HEADER: secret, "Host": "example.com"},
        )
        assert answer.status_code == 200
        assert await rig.replies(42) == ["re: hi by webhook"]
        again = await rig.http.post(  # Telegram retries when it missed our answer
            "/tg/hook",
            content=update_json(10, 42, "hi by webhook"),
            headers={**JSON, SECRET_HEADER: secret},
        )
        assert again.status_code == 200
        await rig.settle()
        assert rig.tg.sent_messages(42) == ["re: hi by webhook"]
        elsewhere = await rig.http.get("/api/v1/sessions", headers={"Host": "example.com"})
        assert elsewhere.status_code != 200  # only the webhook path takes any Host
    assert_never_logged(caplog)
    assert_never_logged(caplog, secret)


@pytest.mark.parametrize("secret", [None, "not-the-secret"])
async def test_a_webhook_post_without_the_right_secret_is_refused(
    tmp_path: Path, secret: str | None
) -> None:
    headers = {**JSON, SECRET_HEADER: secret} if secret else JSON
    async with telegram_rig(tmp_path, webhook_url=HOOK) as rig:
        answer = await rig.http.post(
            "/tg/hook", content=update_json(11, 42, "let me in"), headers=headers
        )
        assert answer.status_code == 401
        await rig.settle()
        assert rig.message_calls() == []
        assert rig.runtime.registry.sessions_of_chat("telegram", "42") == []
    assert rig.llm.requests == []


async def test_in_polling_mode_no_webhook_path_is_served(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path) as rig:  # polling mode: no webhook path is served
        answer = await rig.http.post(
            "/tg/hook", content=update_json(12, 42, "hello?"), headers=JSON
        )
        assert answer.status_code in (401, 403, 404, 405)
        assert await eventually(lambda: rig.tg.polls_waiting > 0)


async def test_an_unreadable_webhook_body_is_refused_without_a_retry_loop(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, webhook_url=HOOK) as rig:
        secret = rig.tg.calls("setWebhook")[0].params["secret_token"]
        answer = await rig.http.post(
            "/tg/hook", content=b"{not json", headers={**JSON, SECRET_HEADER: secret}
        )
        assert answer.status_code == 400
        assert rig.message_calls() == []
