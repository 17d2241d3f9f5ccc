"""Files the agent sends (``send_file``) reach an external gateway once, as ``send_media``.

The fake gateway child records each ``send_media`` (its ``base64`` medium decoded), answers
it as a platform would, or refuses it as scripted.
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.agents import load_catalog
from duragent.testing import Reply, ToolCallReply
from duragent.testing.fake_gateway import message
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.frontkit.media_kit import png
from tests.gateways.external.external_chat import ExternalChat, external_chat
from tests.polling import eventually

PHOTO = png(40, 30)
WITHOUT_MEDIA = ("--capabilities", "edit,delete,typing,reply,inline_keyboard")


def offer_chart(chat: ExternalChat, text: str = "Here it is.") -> None:
    """List ``send_file`` in the agent's tools, with a chart to send and the model's script."""
    folder = chat.workspace / "agents" / "bot"
    manifest = json.loads((folder / "agent.yaml").read_text())
    manifest["spec"]["tools"] = [{"type": "builtin", "name": "send_file"}]
    (folder / "agent.yaml").write_text(json.dumps(manifest))
    chat.catalog = load_catalog(chat.workspace / "agents")
    (folder / "chart.png").write_bytes(PHOTO)
    call = ToolCallReply(
        name="send_file", arguments={"path": "chart.png", "caption": "Sales"}, id="f1"
    )
    chat.llm.enqueue(Reply(tool_calls=[call]), Reply(text=text))


async def test_a_chart_the_model_sends_goes_once_as_send_media_after_the_text(
    tmp_path: Path,
) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        offer_chart(chat)
        await chat.emit(message("42", "the chart please", message_id="m1", sender_id="42"))
        await chat.child.command("send_media")
        await chat.settle()
        kinds = [c["type"] for c in chat.child.commands if c["type"].startswith("send_m")]
        [media] = chat.child.sent_media("42")
        [text] = chat.child.of_type("send_message")
    assert kinds == ["send_message", "send_media"]
    assert text["content"] == "Here it is."
    assert (media.source, media.data, media.mime_type, media.file_name, media.caption) == (
        "base64",
        PHOTO,
        "image/png",
        "chart.png",
        "Sales",
    )


async def test_a_send_media_refused_for_now_is_sent_again_until_taken(tmp_path: Path) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        offer_chart(chat)
        await chat.child.refuse("rate_limited", "slow down", command="send_media")
        await chat.emit(message("42", "the chart please", message_id="m1", sender_id="42"))
        assert await eventually(lambda: len(chat.child.sent_media("42")) == 2, within=120)
        await chat.settle()
        sent = chat.child.sent_media("42")
        texts = [c["content"] for c in chat.child.of_type("send_message")]
    assert [m.data for m in sent] == [PHOTO, PHOTO]
    assert texts == ["Here it is."]


async def test_a_gateway_that_takes_no_media_is_not_asked_and_the_chat_is_told(
    tmp_path: Path,
) -> None:
    async with external_chat(tmp_path, ChatSetup(), *WITHOUT_MEDIA) as chat:
        offer_chart(chat)
        await chat.emit(message("42", "the chart please", message_id="m1", sender_id="42"))
        assert await eventually(lambda: len(chat.child.of_type("send_message")) == 2)
        await chat.settle()
        texts = [c["content"] for c in chat.child.of_type("send_message")]
    assert chat.child.sent_media() == []
    assert texts == ["Here it is.", "(I could not send chart.png: the chat platform refused it.)"]
