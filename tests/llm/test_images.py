"""``fit_image``: any photo, screenshot or sticker made into what a vision provider accepts.

Every image here is made with Pillow in the test; the bombs are real PNGs whose few
kilobytes would decode to tens of megapixels.
"""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image, ImageCms

from duragent.errors import ImageRejectedError
from duragent.llm.image_size import (
    ANTHROPIC_MAX_EDGE,
    ANTHROPIC_MAX_PIXELS,
    ImageFormula,
    encoded_length,
    fitted_size,
    image_tokens,
)
from duragent.llm.images import MAX_PIXELS, fit_image

RED = (220, 20, 20)
BLUE = (20, 20, 220)


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def gradient(width: int, height: int) -> Image.Image:
    """A smooth RGB picture (cheap to make and to compress at any size)."""
    grey = Image.linear_gradient("L").resize((width, height))
    return Image.merge("RGB", (grey, grey.transpose(Image.Transpose.FLIP_LEFT_RIGHT), grey))


def noise(width: int, height: int) -> Image.Image:
    """A picture JPEG compresses badly, to make byte limits bite."""
    channels = [Image.effect_noise((width, height), 90) for _ in range(3)]
    return Image.merge("RGB", channels)


def opened(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def png_bomb(width: int, height: int) -> bytes:
    """A valid 1-bit PNG of ``width``×``height`` black pixels: kilobytes on disk."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    row = b"\x00" * (1 + (width + 7) // 8)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("formula", ["openai", "anthropic"])
def test_a_huge_png_is_made_to_fit_the_providers_limits(formula: ImageFormula) -> None:
    data = encode(gradient(3600, 2400), "PNG")

    fitted = fit_image(data, formula)

    assert (fitted.width, fitted.height) == fitted_size(formula, 3600, 2400)
    assert opened(fitted.data).size == (fitted.width, fitted.height)
    assert fitted.mime == "image/jpeg"
    assert opened(fitted.data).format == "JPEG"
    assert image_tokens(formula, fitted.width, fitted.height) == image_tokens(formula, 3600, 2400)
    if formula == "openai":
        assert (fitted.width, fitted.height) == (1152, 768)
    else:
        assert max(fitted.width, fitted.height) <= ANTHROPIC_MAX_EDGE
        assert fitted.width * fitted.height <= ANTHROPIC_MAX_PIXELS


def test_a_small_image_is_not_enlarged() -> None:
    fitted = fit_image(encode(gradient(300, 200), "PNG"), "openai")

    assert (fitted.width, fitted.height) == (300, 200)


def test_a_portrait_photo_stored_sideways_is_turned_upright_by_its_exif() -> None:
    stored = Image.new("RGB", (400, 300), BLUE)
    stored.paste(RED, (0, 0, 200, 300))  # the left half: the top once turned
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to display"
    data = encode(stored, "JPEG", exif=exif.tobytes(), quality=95)

    fitted = fit_image(data, "anthropic")
    image = opened(fitted.data).convert("RGB")

    assert (fitted.width, fitted.height) == (300, 400)
    top, bottom = image.getpixel((150, 50)), image.getpixel((150, 350))
    assert isinstance(top, tuple)
    assert isinstance(bottom, tuple)
    assert (top[0] > 150, top[2] < 100) == (True, True), top
    assert (bottom[2] > 150, bottom[0] < 100) == (True, True), bottom
    assert 0x0112 not in image.getexif(), "the orientation (and all metadata) is dropped"


@pytest.mark.parametrize(("mode", "fmt"), [("RGB", "JPEG"), ("RGBA", "PNG"), ("RGBA", "WEBP")])
def test_no_metadata_of_the_file_is_sent(mode: str, fmt: str) -> None:
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"  # stands for the camera, the time, the GPS position
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    image = Image.new(mode, (50, 40), (1, 2, 3) if mode == "RGB" else (1, 2, 3, 100))
    data = encode(image, fmt, exif=exif.tobytes(), icc_profile=icc)

    sent = opened(fit_image(data, "openai").data)

    assert dict(sent.getexif()) == {}
    assert "icc_profile" not in sent.info


def test_an_image_with_transparency_stays_a_png_with_its_alpha() -> None:
    sticker = Image.new("RGBA", (3000, 2000), (0, 0, 0, 0))
    sticker.paste((*RED, 255), (1000, 500, 2000, 1500))

    fitted = fit_image(encode(sticker, "WEBP", lossless=True), "openai")
    image = opened(fitted.data)

    assert fitted.mime == "image/png"
    assert (image.format, image.mode) == ("PNG", "RGBA")
    assert (fitted.width, fitted.height) == (1152, 768)
    assert image.getpixel((0, 0)) == (0, 0, 0, 0)


def test_an_alpha_channel_that_is_opaque_everywhere_makes_a_jpeg() -> None:
    opaque = gradient(200, 100).convert("RGBA")

    assert fit_image(encode(opaque, "PNG"), "openai").mime == "image/jpeg"


def test_a_gif_sends_its_first_frame() -> None:
    frames = [Image.new("RGB", (120, 80), colour) for colour in (RED, BLUE)]
    data = encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100)

    fitted = fit_image(data, "anthropic")
    pixel = opened(fitted.data).convert("RGB").getpixel((60, 40))

    assert isinstance(pixel, tuple)
    assert (pixel[0] > 150, pixel[2] < 100) == (True, True), pixel


def test_a_phones_multi_picture_jpeg_sends_its_main_picture() -> None:
    pictures = [Image.new("RGB", (3000, 2000), RED), Image.new("RGB", (300, 200), BLUE)]
    data = encode(pictures[0], "MPO", save_all=True, append_images=pictures[1:])

    fitted = fit_image(data, "openai")
    pixel = opened(fitted.data).getpixel((5, 5))

    assert (fitted.mime, fitted.width, fitted.height) == ("image/jpeg", 1152, 768)
    assert isinstance(pixel, tuple)
    assert (pixel[0] > 150, pixel[2] < 100) == (True, True), pixel


def test_a_cmyk_jpeg_becomes_an_rgb_jpeg() -> None:
    data = encode(Image.new("CMYK", (64, 64), (0, 255, 255, 0)), "JPEG")

    assert opened(fit_image(data, "openai").data).mode == "RGB"


def test_a_16_bit_grey_png_keeps_its_brightness() -> None:
    data = encode(Image.new("I;16", (32, 32), 65535), "PNG")

    image = opened(fit_image(data, "openai").data)

    assert image.mode == "L"
    assert image.getpixel((16, 16)) == 255


@pytest.mark.parametrize("formula", ["openai", "anthropic"])
def test_the_encoding_stays_under_the_byte_limit(formula: ImageFormula) -> None:
    data = encode(noise(800, 600), "PNG")
    cap = 40_000

    fitted = fit_image(data, formula, max_bytes=cap)

    assert encoded_length(len(fitted.data)) <= cap
    assert fitted.width < fitted_size(formula, 800, 600)[0], "made smaller to fit"
    assert opened(fitted.data).size == (fitted.width, fitted.height)


def test_an_image_that_no_encoding_fits_is_rejected() -> None:
    with pytest.raises(ImageRejectedError) as info:
        fit_image(encode(gradient(64, 64), "PNG"), "openai", max_bytes=10)

    assert info.value.reason == "too_large"


def test_the_same_bytes_always_give_the_same_image() -> None:
    data = encode(noise(900, 700), "JPEG", quality=90)

    assert fit_image(data, "anthropic") == fit_image(data, "anthropic")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"plain text, not an image",
        b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n",
        encode(Image.new("RGB", (8, 8)), "BMP"),  # an image, but not a format sent to models
        encode(gradient(300, 200), "JPEG")[:400],  # cut short
    ],
    ids=["empty", "text", "pdf", "bmp", "truncated-jpeg"],
)
def test_bytes_that_are_not_an_image_are_rejected_with_a_clear_error(data: bytes) -> None:
    with pytest.raises(ImageRejectedError, match=r"not an image|could not be decoded") as info:
        fit_image(data, "openai")

    assert info.value.reason == "not_an_image"
    assert isinstance(info.value, ValueError)


def test_a_decompression_bomb_is_rejected_from_its_header() -> None:
    bomb = png_bomb(9000, 9000)
    assert len(bomb) < 100_000
    assert MAX_PIXELS < 9000 * 9000

    with pytest.raises(ImageRejectedError, match="9000×9000") as info:
        fit_image(bomb, "openai")

    assert info.value.reason == "too_many_pixels"


def test_a_bomb_pillow_itself_refuses_is_rejected_the_same_way() -> None:
    with pytest.raises(ImageRejectedError) as info:
        fit_image(png_bomb(20_000, 10_000), "anthropic")

    assert info.value.reason == "too_many_pixels"


def test_the_pixel_limit_can_be_lowered() -> None:
    with pytest.raises(ImageRejectedError, match="megapixels"):
        fit_image(encode(gradient(100, 100), "PNG"), "openai", max_pixels=1000)
