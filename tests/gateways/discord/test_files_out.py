"""Files the agent sends (``send_file``) reach a Discord channel once, attached to a message.

The real gateway against the fake Discord, which records each attachment the bot uploads
with the message's text (the caption).
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.agents import load_catalog
from duragent.testing import Reply, ToolCallReply
from duragent.testing.discord_objects import Person
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.frontkit.media_kit import png
from tests.gateways.discord.discord_chat import DiscordChat, discord_chat
from tests.polling import eventually

ANN = Person(1001, "ann", global_name="Ann")
DM = 1001
PHOTO = png(40, 30)


def offer_send_file(chat: DiscordChat) -> Path:
    """List ``send_file`` in the agent's tools (read at the next turn); its folder."""
    folder = chat.workspace / "agents" / "bot"
    manifest = json.loads((folder / "agent.yaml").read_text())
    manifest["spec"]["tools"] = [{"type": "builtin", "name": "send_file"}]
    (folder / "agent.yaml").write_text(json.dumps(manifest))
    chat.catalog = load_catalog(chat.workspace / "agents")
    return folder


async def test_a_chart_the_model_sends_arrives_once_attached_after_the_text(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        (offer_send_file(chat) / "chart.png").write_bytes(PHOTO)
        call = ToolCallReply(
            name="send_file", arguments={"path": "chart.png", "caption": "Sales"}, id="f1"
        )
        chat.llm.enqueue(Reply(tool_calls=[call]), Reply(text="Here it is."))
        await chat.push(DM, "the chart please", ANN)
        await chat.settle()
        assert await eventually(lambda: len(chat.dc.sent_files(DM)) == 1)
        [file] = chat.dc.sent_files(DM)
        messages = chat.dc.sent(DM)
    assert (file.filename, file.data, file.content) == ("chart.png", PHOTO, "Sales")
    assert [m["content"] for m in messages] == ["Here it is.", "Sales"]
    assert int(messages[-1]["id"]) == file.message_id


async def test_a_file_over_discords_upload_limit_is_told_in_a_line_and_never_retried(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.uploads.upload_limit = 1024
        (offer_send_file(chat) / "big.pdf").write_bytes(b"%PDF-1.4\n" + bytes(4096))
        call = ToolCallReply(name="send_file", arguments={"path": "big.pdf"}, id="f1")
        chat.llm.enqueue(Reply(tool_calls=[call]), Reply(text="The report."))
        await chat.push(DM, "the report please", ANN)
        await chat.settle()
        texts = [m["content"] for m in chat.dc.sent(DM)]
        refused = [c.status for c in chat.dc.calls("POST", f"/channels/{DM}/messages")]
    assert texts == ["The report.", "(I could not send big.pdf: the chat platform refused it.)"]
    assert chat.dc.sent_files(DM) == []
    assert refused == [200, 413, 200]
