"""The images a model request carried, read back from its JSON for a test's assertions.

A vision model gets a picture in the provider's own form: an OpenAI-compatible user message's
``content`` is a list of parts, ``{"type": "image_url", "image_url": {"url":
"data:image/png;base64,…", "detail": …}}`` (or an ``https`` URL); an Anthropic message has
``{"type": "image", "source": {"type": "base64", "media_type": …, "data": …}}`` blocks (or a
``url`` source), in its content and inside ``tool_result`` blocks. ``request_images`` finds
each one, in order, with its decoded bytes, declared type and real size, so a test asks "did
the model see the photo, resized, as a PNG" without walking the JSON itself.

``problem`` says why the provider would refuse the image (the fake answers that 400 when
started with ``strict_images``): base64 that does not decode, a type the vision APIs do not
take (PNG, JPEG, GIF, WebP), bytes that are not the declared type (Anthropic checks), an image
over the provider's size limit (Anthropic 5 MB of base64 and 8000 pixels a side, OpenAI 20 MB).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from duragent.testing._image_sniff import sniff_image
from duragent.testing.script import Fault, RecordedRequest, Wire

__all__ = ["RequestImage", "image_refusal", "request_images"]

VISION_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
ANTHROPIC_MAX_BASE64 = 5 * 1024 * 1024
ANTHROPIC_MAX_SIDE = 8000
OPENAI_MAX_BYTES = 20 * 1024 * 1024
_DATA_URL = re.compile(r"data:(?P<mime>[^;,]*)(?P<params>(;[^;,]*)*?);base64,(?P<data>.*)", re.S)


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestImage:
    """One image in a model request."""

    wire: Wire
    message: int
    """Index of its message in ``messages``."""
    role: str
    mime: str | None
    """The declared type (a data URL's, Anthropic's ``media_type``)."""
    data: bytes | None
    """The decoded bytes; ``None`` for an image sent by URL or base64 that did not decode."""
    url: str | None = None
    """The ``http(s)`` address of an image sent by reference."""
    detail: str | None = None
    """OpenAI's ``detail`` (``low``, ``high``, ``auto``), when given."""
    width: int | None = None
    height: int | None = None
    real_mime: str | None = None
    """What the bytes are (PNG, JPEG, GIF or WebP), whatever was declared."""
    in_tool_result: bool = False
    """Inside an Anthropic ``tool_result`` block (an image a tool returned)."""
    problem: str | None = None
    """Why the provider would refuse it (see the module docstring), else ``None``."""


def _decoded(text: Any) -> bytes | None:
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _image(
    wire: Wire, message: int, role: str, mime: str | None, raw: Any, **more: Any
) -> RequestImage:
    data = _decoded(raw)
    sniffed = sniff_image(data) if data is not None else None
    problem: str | None = None
    if data is None:
        problem = "Invalid base64 image data."
    elif mime not in VISION_TYPES:
        problem = f"Unsupported image type {mime!r}: use one of {', '.join(sorted(VISION_TYPES))}."
    elif sniffed is None:
        problem = "You uploaded an unsupported image: its bytes are not a PNG, JPEG, GIF or WebP."
    elif wire == "anthropic" and sniffed.mime != mime:
        problem = f"Image does not match the provided media type {mime}"
    elif wire == "anthropic" and len(raw) > ANTHROPIC_MAX_BASE64:
        problem = f"image exceeds 5 MB maximum: {len(raw)} bytes > {ANTHROPIC_MAX_BASE64} bytes"
    elif wire == "anthropic" and max(sniffed.width or 0, sniffed.height or 0) > ANTHROPIC_MAX_SIDE:
        problem = f"image dimensions exceed max allowed size: {ANTHROPIC_MAX_SIDE} pixels"
    elif wire == "openai" and len(data) > OPENAI_MAX_BYTES:
        problem = f"image exceeds 20 MB maximum: {len(data)} bytes"
    return RequestImage(
        wire=wire,
        message=message,
        role=role,
        mime=mime,
        data=data,
        width=sniffed.width if sniffed else None,
        height=sniffed.height if sniffed else None,
        real_mime=sniffed.mime if sniffed else None,
        problem=problem,
        **more,
    )


def _openai_part(message: int, role: str, part: dict[str, Any]) -> RequestImage | None:
    if part.get("type") != "image_url":
        return None
    image_url = part.get("image_url")
    if isinstance(image_url, str):  # an older form some servers still take
        image_url = {"url": image_url}
    if not isinstance(image_url, dict) or not isinstance(image_url.get("url"), str):
        return RequestImage(
            wire="openai", message=message, role=role, mime=None, data=None, problem="no url"
        )
    url, detail = image_url["url"], image_url.get("detail")
    if not url.startswith("data:"):
        return RequestImage(
            wire="openai", message=message, role=role, mime=None, data=None, url=url, detail=detail
        )
    found = _DATA_URL.fullmatch(url)
    mime = found["mime"] if found else None
    return _image("openai", message, role, mime, found["data"] if found else None, detail=detail)


def _anthropic_block(
    message: int, role: str, block: dict[str, Any], in_tool_result: bool
) -> RequestImage | None:
    if block.get("type") != "image":
        return None
    source = block.get("source")
    if not isinstance(source, dict):
        source = {}
    if source.get("type") == "base64":
        mime = source.get("media_type")
        return _image(
            "anthropic",
            message,
            role,
            mime if isinstance(mime, str) else None,
            source.get("data"),
            in_tool_result=in_tool_result,
        )
    url = source.get("url") if source.get("type") == "url" else None
    return RequestImage(
        wire="anthropic",
        message=message,
        role=role,
        mime=None,
        data=None,
        url=url if isinstance(url, str) else None,
        in_tool_result=in_tool_result,
        problem=None if isinstance(url, str) else f"unknown image source {source!r}",
    )


def request_images(request: RecordedRequest) -> list[RequestImage]:
    """Every image in the request's messages, in order (see the module docstring)."""
    messages = request.json.get("messages")
    found: list[RequestImage] = []
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        role = str(message.get("role", ""))
        for part in message["content"]:
            if not isinstance(part, dict):
                continue
            if request.wire == "openai":
                image = _openai_part(index, role, part)
                found.extend([image] if image is not None else [])
                continue
            nested = part.get("content") if part.get("type") == "tool_result" else None
            for block in [part, *(nested if isinstance(nested, list) else [])]:
                if isinstance(block, dict):
                    image = _anthropic_block(index, role, block, block is not part)
                    found.extend([image] if image is not None else [])
    return found


def image_refusal(request: RecordedRequest) -> Fault | None:
    """The provider's 400 for the first image it would refuse in ``request``, if any."""
    problem = next((i.problem for i in request_images(request) if i.problem), None)
    if problem is None:
        return None
    return Fault(status=400, message=problem, error_type="invalid_request_error")
