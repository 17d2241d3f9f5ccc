"""What an image costs a request: the size a provider looks at, and its tokens by their formula.

The context budget promises that a request fits the model's window, so an image is counted
with its provider's own formula, on the pixels the provider will look at. ``fit_image``
(``llm.images``) resizes every image to ``fitted_size`` before it is sent, so the provider
never resizes again and the count is exact; counting an image's original size gives the
tokens of its fitted version (the budget can count before fitting). Sources, worked
examples and why: specs/202612051700.vision.md.

- **OpenAI** (``detail: high``, and ``auto``, counted as high): fit inside 2048×2048, then
  the shortest side down to 768 (never up); 170 tokens per 512-px tile covering it, plus
  85. ``detail: low``: 85.
- **Anthropic**: at most 1568 px on the long edge and 1.15 megapixels (its own limit is
  ~1,600 tokens, so it never resizes what we send); tokens are the larger of
  ⌈w·h/750⌉ (its long-standing formula) and ⌈w/28⌉·⌈h/28⌉ (its 28-px patches, as its
  current documentation counts), so neither reading undercounts.

Every other provider speaks the OpenAI protocol and is counted (and fitted) as OpenAI.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ANTHROPIC_MAX_EDGE",
    "ANTHROPIC_MAX_PIXELS",
    "OPENAI_BOX",
    "OPENAI_SHORT_SIDE",
    "Detail",
    "FittedImage",
    "ImageFormula",
    "encoded_length",
    "fitted_size",
    "formula_of",
    "image_tokens",
    "max_encoded_bytes",
]

ImageFormula = Literal["openai", "anthropic"]
Detail = Literal["low", "high", "auto"]

OPENAI_BOX = 2048
OPENAI_SHORT_SIDE = 768
_OPENAI_TILE = 512
_OPENAI_TILE_TOKENS = 170
_OPENAI_BASE_TOKENS = 85
_OPENAI_MAX_BYTES = 20 * 1024 * 1024

ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
_ANTHROPIC_PIXELS_PER_TOKEN = 750
_ANTHROPIC_PATCH = 28
_ANTHROPIC_MAX_BYTES = 5 * 1024 * 1024
"""Anthropic measures its 5 MB per image on the base64 text (its 400 says ``…source.base64:
image exceeds 5 MB maximum``), so the limits here are on the encoded length."""


@dataclass(frozen=True, slots=True)
class FittedImage:
    """An image as a provider receives it: ``data`` encoded as ``mime``, ``width``×``height``."""

    data: bytes
    mime: str
    width: int
    height: int
    forms: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Its wire forms, made once each (``base64``, ``image_parts``): a fitted image is cached
    and sent again with every request while it is recent (``spec.model.attachment_turns``)."""

    @property
    def base64(self) -> str:
        """The bytes as the request carries them (encoded once)."""
        encoded = self.forms.get("base64")
        if encoded is None:
            encoded = self.forms["base64"] = base64.b64encode(self.data).decode("ascii")
        return str(encoded)


def formula_of(provider: str) -> ImageFormula:
    """How ``provider`` (``spec.model.provider``) counts and limits images."""
    return "anthropic" if provider.strip().lower() == "anthropic" else "openai"


def max_encoded_bytes(formula: ImageFormula) -> int:
    """The largest base64 text one image may be (Anthropic 5 MiB, OpenAI 20 MiB)."""
    return _ANTHROPIC_MAX_BYTES if formula == "anthropic" else _OPENAI_MAX_BYTES


def encoded_length(size: int) -> int:
    """The length of the base64 text of ``size`` bytes."""
    return 4 * -(-size // 3)


def _check(width: int, height: int) -> None:
    if width < 1 or height < 1:
        raise ValueError(f"an image has at least one pixel each way, got {width}×{height}")


def _scaled(side: int, numerator: int, denominator: int) -> int:
    """``side`` × numerator / denominator, rounded to the nearest pixel (at least one)."""
    return max(1, (2 * side * numerator + denominator) // (2 * denominator))


def _openai_size(width: int, height: int) -> tuple[int, int]:
    long, short = max(width, height), min(width, height)
    if long > OPENAI_BOX:
        long, short = OPENAI_BOX, _scaled(short, OPENAI_BOX, long)
    if short > OPENAI_SHORT_SIDE:
        long, short = _scaled(long, OPENAI_SHORT_SIDE, short), OPENAI_SHORT_SIDE
    return (long, short) if width >= height else (short, long)


def _anthropic_size(width: int, height: int) -> tuple[int, int]:
    """The largest size within both limits, aspect ratio kept (rounded down).

    In integers: a float's rounding could put a pixel past a limit.
    """
    long, short = max(width, height), min(width, height)
    side = min(long, ANTHROPIC_MAX_EDGE, math.isqrt(ANTHROPIC_MAX_PIXELS * long // short) + 1)
    while side * max(1, short * side // long) > ANTHROPIC_MAX_PIXELS:
        side -= 1
    other = max(1, short * side // long)
    return (side, other) if width >= height else (other, side)


def fitted_size(formula: ImageFormula, width: int, height: int) -> tuple[int, int]:
    """The size an image of ``width``×``height`` is sent at.

    Within the provider's limits, aspect ratio kept, never enlarged.
    """
    _check(width, height)
    if formula == "anthropic":
        return _anthropic_size(width, height)
    return _openai_size(width, height)


def image_tokens(formula: ImageFormula, width: int, height: int, *, detail: Detail = "high") -> int:
    """The tokens an image of ``width``×``height`` costs once fitted (``fitted_size``).

    ``detail`` is OpenAI's setting for the image part; Anthropic has none.
    """
    w, h = fitted_size(formula, width, height)
    if formula == "anthropic":
        by_area = -(-(w * h) // _ANTHROPIC_PIXELS_PER_TOKEN)
        by_patch = -(-w // _ANTHROPIC_PATCH) * -(-h // _ANTHROPIC_PATCH)
        return max(by_area, by_patch)
    if detail == "low":
        return _OPENAI_BASE_TOKENS
    tiles = -(-w // _OPENAI_TILE) * -(-h // _OPENAI_TILE)
    return _OPENAI_BASE_TOKENS + _OPENAI_TILE_TOKENS * tiles
