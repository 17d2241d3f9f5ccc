"""A snapshot's messages keep what a person's message carried, and older files read as before."""

from __future__ import annotations

from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.messages import Message, Role
from duragent.core.snapshot import message_from_dict, message_to_dict

PHOTO = Attachment(kind=AttachmentKind.IMAGE, mime="image/png", size=3, sha256=content_hash(b"png"))


def test_a_user_message_keeps_its_attachments_through_the_snapshot_form() -> None:
    message = Message.user("see this", (PHOTO,))
    data = message_to_dict(message)
    assert data == {"role": "user", "content": "see this", "attachments": [PHOTO.to_data()]}
    back = message_from_dict(data)
    assert (back.role, back.content, back.attachments) == (Role.USER, "see this", (PHOTO,))


def test_a_message_without_attachments_is_written_as_before() -> None:
    assert message_to_dict(Message.user("hi")) == {"role": "user", "content": "hi"}
    assert message_from_dict({"role": "user", "content": "hi"}).attachments == ()


def test_damaged_attachment_records_in_a_snapshot_are_skipped() -> None:
    data = {"role": "user", "content": "hi", "attachments": [{"kind": 1}, PHOTO.to_data()]}
    assert message_from_dict(data).attachments == (PHOTO,)
    assert message_from_dict({**data, "attachments": "junk"}).attachments == ()
