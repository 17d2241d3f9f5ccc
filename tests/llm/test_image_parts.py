"""An attachment in a request: each provider's image part, and the placeholder line."""

from __future__ import annotations

import base64
import json

import pytest

from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.llm.image_parts import (
    CAPTION_CHARS,
    anthropic_image_block,
    anthropic_user_content,
    attachment_placeholder,
    data_url,
    human_size,
    openai_image_part,
    openai_user_content,
)
from duragent.llm.image_size import FittedImage

PNG = FittedImage(b"\x89PNG fake bytes", "image/png", 2, 1)
JPEG = FittedImage(b"\xff\xd8\xff fake", "image/jpeg", 1, 1)
B64 = base64.b64encode(PNG.data).decode()


def attachment(
    kind: AttachmentKind = AttachmentKind.IMAGE,
    *,
    name: str | None = "holiday.jpg",
    size: int = 1_234_567,
    mime: str = "image/jpeg",
    width: int | None = None,
    height: int | None = None,
) -> Attachment:
    return Attachment(
        kind=kind,
        mime=mime,
        size=size,
        sha256=content_hash(b"x"),
        name=name,
        width=width,
        height=height,
    )


def test_an_openai_image_part_carries_a_data_url() -> None:
    assert data_url(PNG) == f"data:image/png;base64,{B64}"
    assert openai_image_part(PNG) == {"type": "image_url", "image_url": {"url": data_url(PNG)}}
    assert openai_image_part(PNG, detail="low")["image_url"]["detail"] == "low"


def test_an_openai_user_content_is_its_text_then_its_images() -> None:
    content = openai_user_content("what is this?", [PNG, JPEG])

    assert [part["type"] for part in content] == ["text", "image_url", "image_url"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    assert content[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert [p["type"] for p in openai_user_content("", [PNG])] == ["image_url"]
    json.dumps(content)  # plain JSON: what the request body serialises


def test_an_anthropic_image_block_carries_base64_with_its_media_type() -> None:
    assert anthropic_image_block(PNG) == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": B64},
    }


def test_an_anthropic_user_content_puts_its_images_before_its_text() -> None:
    content = anthropic_user_content("compare them", [PNG, JPEG])

    assert [block["type"] for block in content] == ["image", "image", "text"]
    assert content[-1] == {"type": "text", "text": "compare them"}
    assert [b["type"] for b in anthropic_user_content("", [PNG])] == ["image"]


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 KB"),
        (48_200, "48 KB"),
        (999_999, "1.0 MB"),
        (1_234_567, "1.2 MB"),
        (25_000_000, "25 MB"),
        (3_000_000_000, "3.0 GB"),
    ],
)
def test_sizes_read_as_a_person_would_say_them(size: int, text: str) -> None:
    assert human_size(size) == text


def test_an_old_image_becomes_a_line_with_its_name_size_turn_caption_and_path() -> None:
    line = attachment_placeholder(
        attachment(width=4032, height=3024),
        caption="Our beach,\n  at sunset",
        path="files/holiday.jpg",
        seen_on_turn=12,
    )

    assert line == (
        '[image: holiday.jpg, 1.2 MB, 4032×3024 — seen on turn 12 — caption: "Our beach, '
        'at sunset" — open it at files/holiday.jpg]'
    )


def test_a_photo_without_a_name_is_named_by_its_type() -> None:
    line = attachment_placeholder(attachment(name=None, size=240_000))

    assert line == "[image (image/jpeg), 240 KB]"


def test_an_unseeable_image_says_why_it_is_not_shown() -> None:
    line = attachment_placeholder(attachment(), note="this model cannot see images")

    assert line == "[image: holiday.jpg, 1.2 MB — this model cannot see images]"


def test_each_kind_is_named_in_words() -> None:
    kinds = {
        AttachmentKind.VOICE: "voice note",
        AttachmentKind.AUDIO: "audio",
        AttachmentKind.VIDEO: "video",
        AttachmentKind.DOCUMENT: "document",
    }
    for kind, noun in kinds.items():
        line = attachment_placeholder(attachment(kind, name=None, mime="x/y", size=5))
        assert line == f"[{noun} (x/y), 5 B]"


def test_a_long_caption_is_cut_in_the_placeholder() -> None:
    line = attachment_placeholder(attachment(), caption="word " * 200)

    caption = line.split('caption: "', 1)[1].rsplit('"', 1)[0]
    assert CAPTION_CHARS - 5 < len(caption) <= CAPTION_CHARS
    assert caption.endswith("…")


def test_a_blank_caption_is_left_out() -> None:
    assert "caption" not in attachment_placeholder(attachment(), caption="  \n ")
