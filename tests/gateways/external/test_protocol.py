"""The wire format ``v1alpha1``: commands as the reference writes them, events as it reads them."""

from __future__ import annotations

import json

import pytest

from duragent.gateways.external import protocol as p


def wire(command: p.Command) -> dict[str, object]:
    line = p.to_line(command)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    decoded: dict[str, object] = json.loads(line)
    return decoded


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            p.SendMessage("r1", "42", "hi"),
            {"type": "send_message", "request_id": "r1", "chat_id": "42", "content": "hi"},
        ),
        (
            p.SendMessage(
                "r2", "42", "ok?", reply_to="7", inline_keyboard=((p.InlineButton("Yes", "y"),),)
            ),
            {
                "type": "send_message",
                "request_id": "r2",
                "chat_id": "42",
                "content": "ok?",
                "reply_to": "7",
                "inline_keyboard": {"rows": [[{"text": "Yes", "callback_data": "y"}]]},
            },
        ),
        (
            p.SendMedia("r3", "42", {"source": "url", "url": "https://x/y.png"}),
            {
                "type": "send_media",
                "request_id": "r3",
                "chat_id": "42",
                "media": {"source": "url", "url": "https://x/y.png"},
            },
        ),
        (p.SendTyping("42"), {"type": "send_typing", "chat_id": "42", "duration": 5}),
        (
            p.EditMessage("r4", "42", "m9", "new"),
            {
                "type": "edit_message",
                "request_id": "r4",
                "chat_id": "42",
                "message_id": "m9",
                "content": "new",
            },
        ),
        (
            p.DeleteMessage("r5", "42", "m9"),
            {"type": "delete_message", "request_id": "r5", "chat_id": "42", "message_id": "m9"},
        ),
        (p.Ping("r6"), {"type": "ping", "request_id": "r6"}),
        (
            p.AnswerCallbackQuery("r7", "cb1", "✓ Running"),
            {
                "type": "answer_callback_query",
                "request_id": "r7",
                "callback_query_id": "cb1",
                "text": "✓ Running",
            },
        ),
        (
            p.AnswerCallbackQuery("r8", "cb1"),
            {"type": "answer_callback_query", "request_id": "r8", "callback_query_id": "cb1"},
        ),
        (p.Shutdown(), {"type": "shutdown"}),
    ],
)
def test_each_command_is_one_line_with_the_reference_fields(
    command: p.Command, expected: dict[str, object]
) -> None:
    assert wire(command) == expected


def test_text_is_written_as_utf8_not_escaped() -> None:
    assert "é✓".encode() in p.to_line(p.SendMessage("r", "1", "é✓"))


MESSAGE = {
    "type": "message_received",
    "message_id": "1",
    "chat_id": "100",
    "sender": {"id": "42", "username": "ann"},
    "content": {"type": "text", "text": "hello @bot"},
    "routing": {
        "channel": "telegram",
        "chat_type": "group",
        "chat_id": "100",
        "sender_id": "42",
        "thread_id": "5",
    },
}


def test_a_message_event_defaults_its_flags_and_keeps_routing_extras() -> None:
    event = p.parse_event(json.dumps(MESSAGE))
    assert isinstance(event, p.MessageReceived)
    assert (event.mentions_bot, event.reply_to_bot, event.reply_to) == (False, False, None)
    assert event.routing.extra("thread_id") == "5"
    assert event.content.as_text() == "hello @bot"


@pytest.mark.parametrize(
    ("content", "text", "kind"),
    [
        ({"type": "text", "text": "hi"}, "hi", "text"),
        ({"type": "media", "media_type": "image", "caption": "look"}, "look", "image"),
        ({"type": "media", "media_type": "voice"}, None, "voice"),
        ({"type": "location", "latitude": 1.5, "longitude": 2.5}, None, "location"),
        ({"type": "contact", "name": "Bo", "phone": "1"}, None, "contact"),
        ({"type": "unknown", "raw": {"x": 1}}, None, "other"),
        ({"type": "hologram"}, None, "other"),
    ],
)
def test_content_gives_its_text_and_kind(
    content: dict[str, object], text: str | None, kind: str
) -> None:
    event = p.parse_event(json.dumps({**MESSAGE, "content": content}))
    assert isinstance(event, p.MessageReceived)
    assert (event.content.as_text(), event.content.kind()) == (text, kind)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ('{"type":"ready","gateway":"tg","version":"v1alpha1"}', p.Ready),
        (
            '{"type":"callback_query","callback_query_id":"c","chat_id":"1",'
            '"sender":{"id":"2"},"message_id":"3","data":"approve:deny"}',
            p.CallbackQuery,
        ),
        ('{"type":"command_ok","request_id":"r"}', p.CommandOk),
        (
            '{"type":"command_error","request_id":"r","code":"rate_limited","message":"m"}',
            p.CommandError,
        ),
        ('{"type":"pong","request_id":"r","uptime_seconds":3,"connected":true}', p.Pong),
        ('{"type":"error","code":"platform_error","message":"m"}', p.ErrorEvent),
        ('{"type":"shutdown","reason":"bye"}', p.ShutdownEvent),
        (
            '{"type":"auth_required","method":{"method":"qr_code","qr_data":"d","expires_in":30}}',
            p.AuthRequired,
        ),
        ('{"type":"auth_success"}', p.AuthSuccess),
        ('{"type":"new_future_event","data":"something"}', p.Unknown),
    ],
)
def test_every_event_type_is_read_and_an_unknown_one_is_kept_as_unknown(
    line: str, kind: type
) -> None:
    assert isinstance(p.parse_event(line), kind)


def test_an_error_is_not_fatal_unless_it_says_so() -> None:
    event = p.parse_event('{"type":"error","code":"c","message":"m"}')
    assert isinstance(event, p.ErrorEvent)
    assert event.fatal is False


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not JSON"),
        ("[1]", "a JSON list, not an object"),
        ('{"no_type": 1}', 'no "type" field'),
        ('{"type": 3}', 'no "type" field'),
        ('{"type":"message_received","chat_id":"1"}', "a malformed message_received event"),
        ('{"type":"command_ok","request_id":7}', "request_id"),
    ],
)
def test_a_line_that_is_not_an_event_is_a_protocol_error_saying_why(
    line: str, problem: str
) -> None:
    with pytest.raises(p.ProtocolError, match=problem.replace("[", r"\[")):
        p.parse_event(line)


@pytest.mark.parametrize(
    ("method", "said"),
    [
        (
            {"method": "pair_code", "code": "12-34", "expires_in": 60},
            "enter the pair code 12-34 within 60 s",
        ),
        (
            {"method": "qr_code", "qr_data": "xyz", "expires_in": 30},
            "scan the QR code within 30 s (data: xyz)",
        ),
        (
            {"method": "qr_code", "qr_data": "xyz", "qr_ascii": "##", "expires_in": 30},
            "scan the QR code within 30 s:\n##",
        ),
    ],
)
def test_a_login_request_says_what_the_operator_must_do(
    method: dict[str, object], said: str
) -> None:
    event = p.parse_event(json.dumps({"type": "auth_required", "method": method}))
    assert isinstance(event, p.AuthRequired)
    assert event.describe() == said


@pytest.mark.parametrize(
    ("version", "major"), [("v1alpha1", "v1"), ("v1", "v1"), ("v2beta3", "v2"), ("1.0", "1.0")]
)
def test_the_major_version_is_what_is_compared(version: str, major: str) -> None:
    assert p.major_version(version) == major
