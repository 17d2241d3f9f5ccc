"""A chat message handed to another node crosses the wire unchanged, or not at all."""

from __future__ import annotations

import pytest

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import ButtonPress, InboundMessage, MediaRef, Sender
from duragent.frontkit.relayed import from_wire, to_wire


def test_a_relayed_message_or_press_reads_back_as_it_was_sent() -> None:
    message = InboundMessage(
        gateway="telegram",
        chat_id="42",
        chat_type="group",
        message_id="7",
        sender=Sender("42", username="ann", display_name="Ann"),
        text="hello",
        mentions_bot=True,
        reply_to_message_id="3",
    )
    press = ButtonPress("fake", "42", "cb1", Sender("42"), "9", "approve:allow_once")
    assert from_wire(to_wire(message)) == message
    assert from_wire(to_wire(press)) == press


def test_a_relayed_message_keeps_its_files_to_be_downloaded_at_the_owner() -> None:
    photo = MediaRef(AttachmentKind.IMAGE, "AgAD-1", unique_id="AQAD-1", size=48_000)
    document = MediaRef(
        AttachmentKind.DOCUMENT,
        "55",
        unique_id="55",
        url="https://cdn.example/55/report.pdf?ex=1",
        name="report.pdf",
        mime="application/pdf",
        size=1234,
    )
    message = InboundMessage(
        gateway="telegram",
        chat_id="42",
        chat_type="dm",
        message_id="8",
        sender=Sender("42"),
        text="look",
        content_kind="photo",
        media=(photo, document),
    )
    assert from_wire(to_wire(message)) == message


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"kind": "message", "value": {"gateway": "telegram"}}',
        b'{"kind": "letter", "value": {"sender": {"id": "1"}}}',
        b'{"kind": "press", "value": {"sender": "someone"}}',
        b'{"kind": "message", "value": {"sender": {"id": "1"}, "media": [{"kind": "gif"}]}}',
    ],
)
def test_a_body_that_is_not_a_relayed_message_is_refused(body: bytes) -> None:
    with pytest.raises(ValueError, match="not a relayed chat message"):
        from_wire(body)
