"""What an image's first bytes say it is: its format and size, without an imaging library.

Two fakes need it: the fake Telegram dates a pushed photo's ``PhotoSize`` entries with the
picture's true width and height (a vision budget is counted from them), and the fake model
server tells a test how large each image it received was and whether its declared type is
its real one (Anthropic refuses an ``image/png`` that is a JPEG). Pillow is not a dependency
of duragent, so the four formats the vision APIs take are read from their headers here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["SniffedImage", "sniff_image"]


@dataclass(frozen=True, slots=True)
class SniffedImage:
    """An image's format (a MIME type) and, when its header says, its size in pixels."""

    mime: str
    width: int | None = None
    height: int | None = None


def sniff_image(data: bytes) -> SniffedImage | None:
    """PNG, JPEG, GIF or WebP with its size; ``None`` for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if len(data) >= 24 and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return SniffedImage("image/png", width, height)
        return SniffedImage("image/png")
    if data[:6] in (b"GIF87a", b"GIF89a"):
        if len(data) >= 10:
            width, height = struct.unpack("<HH", data[6:10])
            return SniffedImage("image/gif", width, height)
        return SniffedImage("image/gif")
    if data.startswith(b"\xff\xd8\xff"):
        return _jpeg(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    return None


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (the ones carrying the size; C4/C8/CC are tables and a reserved)."""


def _jpeg(data: bytes) -> SniffedImage:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            break
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return SniffedImage("image/jpeg", width, height)
        at += 2 + length
    return SniffedImage("image/jpeg")


def _webp(data: bytes) -> SniffedImage:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return SniffedImage("image/webp", width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and len(data) >= 25:
        (bits,) = struct.unpack("<I", data[21:25])
        return SniffedImage("image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return SniffedImage("image/webp", width, height)
    return SniffedImage("image/webp")
