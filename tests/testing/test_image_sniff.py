"""The fakes read an image's format and size from its header, for the four vision formats."""

from __future__ import annotations

import struct

import pytest

from duragent.testing._image_sniff import SniffedImage, sniff_image
from tests.testing.images import png


def jpeg(width: int, height: int) -> bytes:
    """A JPEG's header: SOI, an APP0 segment to skip, then the frame with its size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + bytes(9)
    frame = b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, height, width, 1) + bytes(3)
    return b"\xff\xd8" + app0 + frame + b"\xff\xd9"


def webp_extended(width: int, height: int) -> bytes:
    body = b"WEBPVP8X" + struct.pack("<I", 10) + bytes(4)
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body)) + body


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (png(321, 123), SniffedImage("image/png", 321, 123)),
        (b"GIF89a" + struct.pack("<HH", 40, 30) + bytes(8), SniffedImage("image/gif", 40, 30)),
        (jpeg(1024, 768), SniffedImage("image/jpeg", 1024, 768)),
        (webp_extended(5000, 20), SniffedImage("image/webp", 5000, 20)),
        (b"\xff\xd8\xff", SniffedImage("image/jpeg")),
    ],
)
def test_an_images_header_gives_its_format_and_size(data: bytes, expected: SniffedImage) -> None:
    assert sniff_image(data) == expected


def test_bytes_that_are_no_image_are_not_guessed_at() -> None:
    assert sniff_image(b"%PDF-1.7") is None
    assert sniff_image(b"") is None
