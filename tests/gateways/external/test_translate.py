"""``message_received`` / ``callback_query`` as the kit's values, named by the configured name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import MediaRef
from duragent.gateways.external import protocol
from duragent.gateways.external.translate import message_of, press_of
from duragent.testing.fake_gateway import media_message
from duragent.testing.gateway_control import message


def parsed(event: dict[str, Any]) -> protocol.Event:
    return protocol.parse_event(json.dumps(event))


def test_a_message_is_named_by_the_configured_gateway_not_its_channel() -> None:
    event = parsed(
        message("100", "hi", message_id="5", sender_id="42", chat_type="group", reply_to="4")
        | {"mentions_bot": True, "sender": {"id": "42", "username": "ann", "display_name": "Ann"}}
    )
    assert isinstance(event, protocol.MessageReceived)
    msg = message_of("slack", event)
    assert (msg.gateway, msg.chat_id, msg.chat_type, msg.message_id) == (
        "slack",
        "100",
        "group",
        "5",
    )
    assert (msg.sender.id, msg.sender.username, msg.sender.label) == ("42", "ann", "Ann")
    assert (msg.text, msg.content_kind, msg.mentions_bot, msg.reply_to_bot) == (
        "hi",
        "text",
        True,
        False,
    )
    assert msg.reply_to_message_id == "4"


@pytest.mark.parametrize(
    ("chat_type", "kit"),
    [
        ("dm", "dm"),
        ("DM", "dm"),
        ("group", "group"),
        ("channel", "channel"),
        ("supergroup", "group"),
        ("", "group"),
    ],
)
def test_the_chat_type_is_read_without_case_and_an_unknown_one_is_a_group(
    chat_type: str, kit: str
) -> None:
    event = parsed(message("1", "x", message_id="1", sender_id="1", chat_type=chat_type))
    assert isinstance(event, protocol.MessageReceived)
    assert message_of("g", event).chat_type == kit


def test_a_thread_id_in_routing_is_kept() -> None:
    raw = message("1", "x", message_id="1", sender_id="1")
    raw["routing"]["thread_id"] = 77
    event = parsed(raw)
    assert isinstance(event, protocol.MessageReceived)
    assert message_of("g", event).thread_id == "77"


def test_a_button_press_keeps_its_ids_and_payload() -> None:
    event = parsed(
        {
            "type": "callback_query",
            "callback_query_id": "cb9",
            "chat_id": "100",
            "sender": {"id": "42"},
            "message_id": "g3",
            "data": "approve:deny:abcd1234",
        }
    )
    assert isinstance(event, protocol.CallbackQuery)
    press = press_of("slack", event)
    assert (press.gateway, press.chat_id, press.callback_id, press.message_id, press.data) == (
        "slack",
        "100",
        "cb9",
        "g3",
        "approve:deny:abcd1234",
    )
    assert press.sender.id == "42"


@pytest.mark.parametrize(
    ("media_type", "kind", "name"),
    [
        ("image", AttachmentKind.IMAGE, "cat.png"),
        ("photo", AttachmentKind.IMAGE, "cat.png"),
        ("voice", AttachmentKind.VOICE, None),
        ("audio", AttachmentKind.AUDIO, "cat.png"),
        ("video_note", AttachmentKind.VIDEO, "cat.png"),
        ("Document", AttachmentKind.DOCUMENT, "cat.png"),
        ("file", AttachmentKind.DOCUMENT, "cat.png"),
    ],
)
def test_media_content_with_a_link_is_a_file_the_kit_downloads(
    media_type: str, kind: AttachmentKind, name: str | None
) -> None:
    url = "https://files.example/m/1/cat.png?sig=1"
    event = parsed(media_message("42", url, media_type=media_type, message_id="m", sender_id="9"))
    assert isinstance(event, protocol.MessageReceived)
    assert message_of("wa", event).media == (MediaRef(kind, url, url=url, name=name),)


def test_what_a_gateway_says_of_a_file_is_kept_and_a_malformed_extra_dropped() -> None:
    url = "https://files.example/x"
    said = media_message(
        "42",
        url,
        media_type="document",
        message_id="m",
        sender_id="9",
        file_name="q.pdf",
        mime_type="application/pdf",
        size=77,
    )
    event = parsed(said)
    assert isinstance(event, protocol.MessageReceived)
    [ref] = message_of("wa", event).media
    assert (ref.name, ref.mime, ref.size) == ("q.pdf", "application/pdf", 77)
    said["content"] |= {"size": -1, "file_name": 5, "mime_type": ["x"]}
    event = parsed(said)
    assert isinstance(event, protocol.MessageReceived)
    [ref] = message_of("wa", event).media
    assert (ref.name, ref.mime, ref.size) == (None, None, None)


@pytest.mark.parametrize(
    "content",
    [
        {"type": "media", "media_type": "image"},
        {"type": "media", "media_type": "sticker", "url": "https://files.example/s.webp"},
        {"type": "location", "url": "https://files.example/s.png"},
    ],
)
def test_content_without_a_file_to_take_carries_none(content: dict[str, Any]) -> None:
    event = parsed(message("42", "", message_id="m", sender_id="9") | {"content": content})
    assert isinstance(event, protocol.MessageReceived)
    assert message_of("wa", event).media == ()
