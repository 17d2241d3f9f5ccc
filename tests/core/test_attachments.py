"""An attachment is plain data: its hash is its address, its event form reads back as written."""

from __future__ import annotations

import pytest

from duragent.core.attachments import (
    Attachment,
    AttachmentKind,
    attachments_of,
    content_hash,
    is_content_hash,
)

VOICE = Attachment(
    kind=AttachmentKind.VOICE,
    mime="audio/ogg",
    size=5,
    sha256=content_hash(b"voice"),
    platform_id="tg-voice-9",
    transcript="hello there",
)


def test_the_content_hash_is_the_sha256_of_the_bytes_in_lowercase_hex() -> None:
    digest = content_hash(b"")
    assert digest == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert is_content_hash(digest)


@pytest.mark.parametrize(
    "text", ["", "../x", "E3B0" + "0" * 60, "0" * 63, "0" * 65, "0" * 64 + "\n", "g" * 64]
)
def test_nothing_but_64_lowercase_hex_digits_is_a_content_hash(text: str) -> None:
    assert not is_content_hash(text)


def test_an_attachment_reads_back_from_its_event_form_without_the_empty_keys() -> None:
    data = VOICE.to_data()
    assert "name" not in data
    assert "width" not in data
    assert Attachment.of(data) == VOICE
    assert VOICE.label == "voice"


def test_an_attachment_naming_no_content_hash_is_refused() -> None:
    with pytest.raises(ValueError, match="64 hex digits"):
        Attachment(kind=AttachmentKind.DOCUMENT, mime="text/plain", size=1, sha256="../../x")


def test_a_size_json_cannot_hold_as_an_integer_is_not_an_attachment() -> None:
    with pytest.raises(ValueError, match="not an attachment record"):
        Attachment.of({**VOICE.to_data(), "size": float("inf")})


def test_a_stored_list_of_attachments_keeps_the_good_records_and_skips_the_rest() -> None:
    records = [VOICE.to_data(), {"kind": "voice"}, None, "x", {**VOICE.to_data(), "kind": "?"}]
    assert attachments_of(records) == (VOICE,)
    assert attachments_of({"kind": "voice"}) == ()
    assert attachments_of(None) == ()
