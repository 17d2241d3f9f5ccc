"""An attachment in a request: an image in each provider's wire form, or a line of text.

Two shapes carry an image to a model that can see (``vision.can_see``), both base64 data in
the request (no URL a provider would have to fetch from us):

- OpenAI-compatible chat completions: the user message's ``content`` becomes a list of
  parts, ``{"type": "text", …}`` and ``{"type": "image_url", "image_url": {"url":
  "data:<mime>;base64,…"}}``;
- Anthropic Messages: ``{"type": "image", "source": {"type": "base64", "media_type": …,
  "data": …}}`` blocks, placed before the text (Anthropic's advice: images first).

Any other attachment, an image the model cannot see, and an image old enough to be
dropped from requests, become ``attachment_placeholder``: one bracketed line naming what it
was, how big, what its caption said, when the model saw it, and where a tool can open it,
so the model knows it exists and can ask for it. Pure functions; the request builders call
them (``specs/202612051700.vision.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duragent.core.attachments import Attachment, AttachmentKind
from duragent.llm._wire_body import dumps
from duragent.llm.image_size import Detail, FittedImage

__all__ = [
    "CAPTION_CHARS",
    "anthropic_image_block",
    "anthropic_user_content",
    "attachment_placeholder",
    "data_url",
    "human_size",
    "openai_image_part",
    "openai_user_content",
    "openai_user_fragment",
]

CAPTION_CHARS = 300
"""A caption longer than this is cut in a placeholder (the message's text has it whole)."""

_NOUNS = {
    AttachmentKind.IMAGE: "image",
    AttachmentKind.VOICE: "voice note",
    AttachmentKind.AUDIO: "audio",
    AttachmentKind.VIDEO: "video",
    AttachmentKind.DOCUMENT: "document",
}


def data_url(image: FittedImage) -> str:
    """The image as a ``data:`` URL (what an OpenAI ``image_url`` part carries)."""
    return f"data:{image.mime};base64,{image.base64}"


def openai_image_part(image: FittedImage, *, detail: Detail | None = None) -> dict[str, Any]:
    """One ``image_url`` content part; ``detail`` is sent only when given (else ``auto``)."""
    url: dict[str, Any] = {"url": data_url(image)}
    if detail is not None:
        url["detail"] = detail
    return {"type": "image_url", "image_url": url}


def openai_user_content(
    text: str, images: Sequence[FittedImage], *, detail: Detail | None = None
) -> list[dict[str, Any]]:
    """A user message's ``content`` list: its text (when any), then its images."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts.extend(openai_image_part(image, detail=detail) for image in images)
    return parts


def openai_user_fragment(text: str, images: Sequence[FittedImage]) -> bytes:
    """The serialised user message ``openai_user_content`` makes, byte for byte.

    Each image's part is serialised once (the image is sent again every turn while recent).
    """
    parts = [dumps({"type": "text", "text": text})] if text else []
    for image in images:
        part = image.forms.get("openai_part")
        if part is None:
            part = image.forms["openai_part"] = dumps(openai_image_part(image))
        parts.append(part)
    return b'{"role":"user","content":[' + b",".join(parts) + b"]}"


def anthropic_image_block(image: FittedImage) -> dict[str, Any]:
    """One Anthropic ``image`` content block with the bytes inline."""
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime, "data": image.base64},
    }


def anthropic_user_content(text: str, images: Sequence[FittedImage]) -> list[dict[str, Any]]:
    """A user turn's content blocks: its images, then its text (when any)."""
    blocks = [anthropic_image_block(image) for image in images]
    if text:
        blocks.append({"type": "text", "text": text})
    return blocks


def human_size(size: int) -> str:
    """``size`` bytes as a person reads it: ``512 B``, ``48 KB``, ``1.2 MB`` (decimal units)."""
    if size < 1000:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1000
        if value < 999.95 or unit == "TB":
            return f"{value:.1f} {unit}" if value < 9.95 else f"{value:.0f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def _caption(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > CAPTION_CHARS:
        one_line = one_line[: CAPTION_CHARS - 1].rstrip() + "…"
    return one_line


def attachment_placeholder(
    attachment: Attachment,
    *,
    caption: str | None = None,
    path: str | None = None,
    seen_on_turn: int | None = None,
    note: str | None = None,
) -> str:
    """The line an attachment becomes where its content is not sent.

    ``[image: holiday.jpg, 1.2 MB, 4032×3024 — seen on turn 12 — caption: "Our beach"
    — open it at files/holiday.jpg]``. ``seen_on_turn``: the turn whose request showed it to
    the model (an older image); ``note``: why it is not shown, for the model (e.g. "this
    model cannot see images"); ``path``: where the agent's tools can read the file.
    """
    noun = _NOUNS.get(attachment.kind, attachment.kind.value)
    what = f"{noun}: {attachment.name}" if attachment.name else f"{noun} ({attachment.mime})"
    facts = [what, human_size(attachment.size)]
    if attachment.width and attachment.height:
        facts.append(f"{attachment.width}×{attachment.height}")
    parts = [", ".join(facts)]
    if seen_on_turn is not None:
        parts.append(f"seen on turn {seen_on_turn}")
    if note:
        parts.append(note)
    if caption and caption.strip():
        parts.append(f'caption: "{_caption(caption)}"')
    if path:
        parts.append(f"open it at {path}")
    return "[" + " — ".join(parts) + "]"
