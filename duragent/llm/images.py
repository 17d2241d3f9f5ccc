"""Fitting an image to a provider's limits: decode, turn upright, downscale, recompress.

A photo from a phone is 12 megapixels of JPEG with its rotation in EXIF; a screenshot is a
PNG; a sticker a WebP with transparency; a GIF may move. Providers take a few formats, a
few megabytes, and look at a bounded number of pixels (``image_size``). ``fit_image`` makes
any of these into what the provider receives:

1. **Refuse** what is not a PNG, JPEG, WebP or GIF (no other decoder runs on untrusted
   bytes), and a canvas over ``MAX_PIXELS`` from its header alone, before decoding: a
   decompression bomb is a few kilobytes that would decode to gigabytes.
2. **Decode** the first frame (a JPEG at a reduced scale when that still covers the target:
   a fraction of the memory and time), and **turn it upright** by its EXIF orientation,
   which is then dropped with the rest of the metadata (a photo's GPS position included).
3. **Downscale** to ``fitted_size`` (Lanczos; never enlarged).
4. **Encode** as PNG when it has real transparency, else JPEG (quality 85, then lower),
   until its base64 text is within the provider's per-image limit; an image that still
   does not fit is made 3/4 the size and encoded again.

Deterministic: the same bytes give the same output (a cache can key it by content hash).
"""

from __future__ import annotations

import io

from PIL import Image, ImageOps, UnidentifiedImageError

from duragent.errors import ImageRejectedError
from duragent.llm.image_size import (
    FittedImage,
    ImageFormula,
    encoded_length,
    fitted_size,
    max_encoded_bytes,
)

__all__ = ["FORMATS", "JPEG_QUALITIES", "MAX_PIXELS", "fit_image"]

FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
"""The formats decoded; everything else is refused (Pillow tries no other plugin)."""

MAX_PIXELS = 80_000_000
"""The largest canvas decoded: a 50-megapixel camera passes, a bomb does not (and neither
does Pillow's own warning threshold, ~89 megapixels, come into play below it)."""

JPEG_QUALITIES = (85, 70, 55, 40)
"""JPEG qualities tried in turn before the image is made smaller."""

_SHRINK = (3, 4)
_TRANSPARENT_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def _reject(message: str, reason: str) -> ImageRejectedError:
    return ImageRejectedError(message, reason=reason)


def _open(data: bytes, max_pixels: int) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _reject(
            "the image's canvas is far too large to decode (a decompression bomb?)",
            "too_many_pixels",
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError):
        raise _reject(
            "this is not an image that can be shown to a model (PNG, JPEG, WebP or GIF)",
            "not_an_image",
        ) from None
    width, height = image.size
    if width < 1 or height < 1:
        raise _reject("the image has no pixels", "not_an_image")
    if width * height > max_pixels:
        raise _reject(
            f"the image is {width}×{height} ({width * height / 1e6:.0f} megapixels), more "
            f"than the {max_pixels / 1e6:.0f} megapixels decoded (a decompression bomb?)",
            "too_many_pixels",
        )
    return image


def _orientation(image: Image.Image) -> int:
    try:
        value = image.getexif().get(0x0112, 1)
    except Exception:  # a broken EXIF block only loses the rotation
        return 1
    return value if isinstance(value, int) else 1


def _decode(image: Image.Image, formula: ImageFormula) -> tuple[Image.Image, tuple[int, int]]:
    """The first frame, upright, in a mode JPEG or PNG can hold; and the size to send it at.

    The size is computed from the canvas the file declares (as ``image_tokens`` counts it),
    not from a JPEG decoded at a reduced scale, whose rounding could differ by a pixel.
    """
    width, height = image.size
    turned = _orientation(image) in (5, 6, 7, 8)
    upright = (height, width) if turned else (width, height)
    target = fitted_size(formula, *upright)
    if image.format in ("JPEG", "MPO"):  # MPO: a phone's JPEG with extra pictures after it
        stored = (target[1], target[0]) if turned else target
        image.draft(None, stored)  # decodes at 1/2, 1/4 or 1/8 scale when that covers it
    try:
        image.load()
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise _reject(f"the image could not be decoded ({exc})", "not_an_image") from None
    try:
        upright_image = ImageOps.exif_transpose(image) or image
    except Exception:  # an unreadable orientation leaves the image as stored
        upright_image, target = image, fitted_size(formula, width, height)
    return _normalised(upright_image), target


def _normalised(image: Image.Image) -> Image.Image:
    """RGBA or LA when some pixel is transparent, else RGB or L (what JPEG holds)."""
    mode = image.mode
    if mode in ("I", "F") or mode.startswith("I;"):  # 16-bit or float grey: scale to 8 bits
        image = image.convert("I").point(lambda v: v * (1 / 256)).convert("L")
        mode = "L"
    has_alpha = mode in _TRANSPARENT_MODES or "transparency" in image.info
    grey = mode in ("1", "L", "LA", "La", "I")
    if has_alpha:
        rgba = image.convert("LA" if grey else "RGBA")
        lowest, _ = rgba.getchannel("A").getextrema()
        if isinstance(lowest, int | float) and lowest < 255:
            return rgba
    wanted = "L" if grey else "RGB"
    return image if mode == wanted else image.convert(wanted)


def _encode(image: Image.Image, quality: int | None) -> bytes:
    out = io.BytesIO()  # no metadata: PNG would carry the decoded ICC profile over
    if quality is None:
        image.save(out, "PNG", compress_level=6, icc_profile=None)
    else:
        image.save(out, "JPEG", quality=quality, optimize=True, icc_profile=None)
    return out.getvalue()


def fit_image(
    data: bytes,
    formula: ImageFormula,
    *,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int | None = None,
) -> FittedImage:
    """``data`` (an image file's bytes) as ``formula``'s provider should receive it.

    ``max_bytes`` bounds the base64 text of the result (default: the provider's per-image
    limit, ``max_encoded_bytes``). Raises ``ImageRejectedError`` for bytes that are not a
    PNG, JPEG, WebP or GIF, a canvas over ``max_pixels``, or an image that cannot be made
    small enough.
    """
    limit = max_encoded_bytes(formula) if max_bytes is None else max_bytes
    image, size = _decode(_open(data, max_pixels), formula)
    transparent = image.mode in ("RGBA", "LA")
    qualities: tuple[int | None, ...] = (None,) if transparent else JPEG_QUALITIES
    while True:
        resized = image if size == image.size else _resized(image, size)
        for quality in qualities:
            encoded = _encode(resized, quality)
            if encoded_length(len(encoded)) <= limit:
                mime = "image/png" if quality is None else "image/jpeg"
                return FittedImage(encoded, mime, size[0], size[1])
        if size == (1, 1):
            raise _reject(
                f"the image cannot be made smaller than {limit} bytes of base64", "too_large"
            )
        size = (
            max(1, size[0] * _SHRINK[0] // _SHRINK[1]),
            max(1, size[1] * _SHRINK[0] // _SHRINK[1]),
        )


def _resized(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
