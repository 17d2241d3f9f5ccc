"""A SIGKILL between a photo's download and its turn loses nothing and downloads it once.

``duragent serve`` runs as a real child (``ServeProcess``) against the fake Bot API. The poll
that would confirm the photo's update to Telegram is held (the update stays unconfirmed),
and the model holds the photo's turn; the server is SIGKILLed while both wait. The next
server finds the message recorded and answers it, and Telegram's redelivery of the update is
recognised without downloading the photo again (``frontkit.media_index``).
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule
from tests.frontkit.media_kit import blob, png, sha256, stored_messages
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually

PHOTO = png(96, 64)


async def test_a_sigkill_between_download_and_turn_loses_nothing_and_downloads_once(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section)
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            serve.start()
            await serve.wait_ready()
            assert await eventually(lambda: tg.polls_waiting >= 1, within=120)
            # The poll waiting now has passed the fault check: the *next* one, which would
            # confirm the photo's update, is held until the fake stops.
            tg.add_fault(FaultRule.slow(3600, method="getUpdates", times=1))
            llm.enqueue(Reply(text="never sent", delay=3600), Reply(text="A red photo."))
            update = tg.push_photo(42, PHOTO, caption="what is it?")
            assert await eventually(lambda: len(llm.requests) >= 1, within=60), "no turn"
            assert [u["update_id"] for u in tg.pending_updates()] == [update["update_id"]]
            serve.kill()

            serve.start()
            await serve.wait_ready()
            assert await eventually(lambda: tg.sent_messages(42) == ["A red photo."], within=60)
            assert await eventually(lambda: not tg.pending_updates(), within=120)
        finally:
            serve.stop()
        photo_id = update["message"]["photo"][-1]["file_id"]
        assert tg.downloads(photo_id) == 1
        assert tg.downloads() == 1
    [stored] = stored_messages(workspace)
    assert stored.content == "what is it?"
    assert [a["sha256"] for a in stored.attachments] == [sha256(PHOTO)]
    assert blob(workspace, stored.session_id, sha256(PHOTO)) == PHOTO
