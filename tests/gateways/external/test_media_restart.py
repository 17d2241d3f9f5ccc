"""A SIGKILL between a linked photo's download and its turn, behind an external gateway.

``duragent serve`` runs as a real child (``ServeProcess``) with the fake gateway plugin as its
own child; the photo's link points at a ``MediaFileServer`` in the test's process, which
outlives the kill and counts downloads. The model holds the photo's turn; the server is
SIGKILLed (its plugin dies with it). The next server answers the recorded message, and the
same event sent again by the new plugin (as a platform resends what it is unsure of) is
recognised without downloading the photo again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from duragent.testing import Reply, ScriptedLLMServer
from duragent.testing._gateway_files import MediaFileServer
from duragent.testing.fake_gateway import media_message
from duragent.testing.gateway_control import GatewayControl
from duragent.testing.serve_process import ServeProcess
from tests.frontkit.media_kit import blob, png, sha256, stored_messages
from tests.gateways.telegram.rig import agent_yaml, echo_reply
from tests.polling import eventually

PHOTO = png(72, 40)


async def test_a_sigkill_between_download_and_turn_loses_nothing_and_downloads_once(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    async with (
        ScriptedLLMServer(responder=echo_reply) as llm,
        GatewayControl() as control,
        MediaFileServer() as files,
    ):
        agent = workspace / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, None, []))
        args = ["-m", "duragent.testing.fake_gateway", "--control", str(control.path)]
        gateway = {"name": "fake", "command": sys.executable, "args": args}
        config = {"server": {"host": "127.0.0.1"}, "gateways": {"external": [gateway]}}
        (tmp_path / "duragent.yaml").write_text(json.dumps(config))
        serve = ServeProcess(tmp_path / "duragent.yaml", gateway="fake")
        try:
            serve.start()
            await serve.wait_ready()
            first = await control.child(0)
            llm.enqueue(Reply(text="never sent", delay=3600), Reply(text="A red photo."))
            url = files.add(PHOTO, "red.png")
            event = media_message("42", url, caption="and this?", message_id="m1", sender_id="42")
            await first.emit(event)
            assert await eventually(lambda: len(llm.requests) >= 1, within=60), "no turn"
            serve.kill()

            serve.start()
            await serve.wait_ready()
            second = await control.child(1)
            await second.emit(event)  # the platform sends it again
            sent = await second.command("send_message", within=60)
            assert sent["content"] == "A red photo."
            assert sent["reply_to"] == "m1"
            assert await eventually(lambda: len(llm.requests) >= 2)
        finally:
            serve.stop()
        assert files.downloads(url) == 1
        assert [c["content"] for c in second.of_type("send_message")] == ["A red photo."]
    [stored] = stored_messages(workspace)
    assert stored.content == "and this?"
    assert [a["sha256"] for a in stored.attachments] == [sha256(PHOTO)]
    assert blob(workspace, stored.session_id, sha256(PHOTO)) == PHOTO
