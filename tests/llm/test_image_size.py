"""Image tokens by each provider's formula, checked against the worked examples of its docs.

OpenAI, "Images and vision", calculating costs (platform.openai.com/docs/guides/vision):
a 1024×1024 image at ``detail: high`` is 765 tokens, 2048×4096 is 1105, any image at
``detail: low`` 85. Anthropic, "Vision", evaluate image size (docs.anthropic.com/en/docs/
vision): tokens = w·h/750, 1000×1000 ≈ 1334; its current page counts 28-px patches,
⌈w/28⌉·⌈h/28⌉, which is larger for small images (200×200: 64 rather than ~54).
"""

from __future__ import annotations

import pytest

from duragent.llm.image_size import (
    ANTHROPIC_MAX_EDGE,
    ANTHROPIC_MAX_PIXELS,
    FittedImage,
    encoded_length,
    fitted_size,
    formula_of,
    image_tokens,
    max_encoded_bytes,
)


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1024, 1024, 765),  # OpenAI's example: scaled to 768×768, 4 tiles
        (2048, 4096, 1105),  # OpenAI's example: 1024×2048, then 768×1536, 6 tiles
        (4096, 2048, 1105),  # the same, lying down
        (512, 512, 255),  # one tile: a small image is never enlarged
        (100, 40, 255),
        (768, 768, 765),
        (513, 512, 425),  # one pixel over a tile is a second tile
    ],
)
def test_openai_high_detail_counts_512_pixel_tiles(width: int, height: int, tokens: int) -> None:
    assert image_tokens("openai", width, height) == tokens


def test_openai_auto_detail_is_counted_as_high() -> None:
    assert image_tokens("openai", 1024, 1024, detail="auto") == 765


def test_openai_low_detail_is_85_tokens_whatever_the_size() -> None:
    assert image_tokens("openai", 4096, 8192, detail="low") == 85  # OpenAI's example


@pytest.mark.parametrize(
    ("width", "height", "fitted"),
    [
        (1024, 1024, (768, 768)),
        (2048, 4096, (768, 1536)),
        (8000, 1000, (2048, 256)),  # the box first; the short side is then under 768
        (300, 200, (300, 200)),
    ],
)
def test_openai_fitted_size_is_the_box_then_the_short_side(
    width: int, height: int, fitted: tuple[int, int]
) -> None:
    assert fitted_size("openai", width, height) == fitted


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1000, 1000, 1334),  # Anthropic's example: ⌈1,000,000 / 750⌉
        (200, 200, 64),  # 8×8 patches of 28 px: more than 40,000 / 750
        (28, 28, 2),  # ⌈784 / 750⌉ = 2 beats one patch
        (1, 1, 1),
    ],
)
def test_anthropic_counts_the_larger_of_area_and_patches(
    width: int, height: int, tokens: int
) -> None:
    assert image_tokens("anthropic", width, height) == tokens


def test_anthropic_counts_a_large_image_as_fitted_to_its_limits() -> None:
    w, h = fitted_size("anthropic", 4032, 3024)
    assert max(w, h) <= ANTHROPIC_MAX_EDGE
    assert w * h <= ANTHROPIC_MAX_PIXELS
    assert abs(w / h - 4032 / 3024) < 0.01
    assert image_tokens("anthropic", 4032, 3024) == image_tokens("anthropic", w, h)
    assert image_tokens("anthropic", 4032, 3024) <= 1600  # Anthropic resizes above ~1,600


def test_anthropic_fits_a_long_image_by_its_long_edge() -> None:
    assert fitted_size("anthropic", 4000, 500) == (1568, 196)


def test_counting_a_fitted_size_again_changes_nothing() -> None:
    for formula in ("openai", "anthropic"):
        for width, height in ((4032, 3024), (1080, 2400), (3000, 100), (640, 480)):
            fitted = fitted_size(formula, width, height)
            assert fitted_size(formula, *fitted) == fitted


def test_an_image_without_pixels_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least one pixel"):
        image_tokens("openai", 0, 10)


def test_only_the_anthropic_provider_uses_the_anthropic_formula() -> None:
    assert formula_of("anthropic") == "anthropic"
    assert [formula_of(p) for p in ("openai", "openrouter", "ollama", "groq")] == ["openai"] * 4


def test_the_byte_limits_are_on_the_base64_text() -> None:
    assert max_encoded_bytes("anthropic") == 5 * 1024 * 1024
    assert max_encoded_bytes("openai") == 20 * 1024 * 1024
    assert [encoded_length(n) for n in (0, 1, 3, 4, 3_932_160)] == [0, 4, 4, 8, 5 * 1024 * 1024]
    assert FittedImage(b"\x00\xff", "image/png", 1, 1).base64 == "AP8="
