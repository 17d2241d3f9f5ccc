"""``message_received`` / ``callback_query`` as the kit's values, named by the configured name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from duragent.gateways.external import protocol
from duragent.gateways.external.translate import message_of, press_of
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
