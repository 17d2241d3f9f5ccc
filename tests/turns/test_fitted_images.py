"""The fitted images a runner keeps: found again without a wait, the least recently used out.

``FittedImages`` with Pillow's real fit of small JPEGs; its byte bound is set to hold two.
"""

from __future__ import annotations

from duragent.core.attachments import content_hash
from duragent.llm.images import fit_image
from duragent.turns.fitted_images import FittedImages
from tests.turns.test_images import jpeg

PHOTOS = [jpeg(320, 240, shade) for shade in (0, 90, 180)]
A, B, C = (content_hash(p) for p in PHOTOS)


async def fitted(images: FittedImages, n: int) -> None:
    await images.get(content_hash(PHOTOS[n]), "openai", lambda: PHOTOS[n])


async def test_an_image_fitted_once_is_found_again_without_a_wait() -> None:
    images = FittedImages()
    assert images.cached(A, "openai") is None
    await fitted(images, 0)
    found = images.cached(A, "openai")
    assert found == fit_image(PHOTOS[0], "openai")
    assert images.cached(A, "anthropic") is None  # fitted per formula
    assert images.fits == 1


async def test_an_image_found_in_the_cache_is_the_last_to_leave_it() -> None:
    two = sum(len(fit_image(p, "openai").data) for p in PHOTOS[:2])
    images = FittedImages(max_bytes=two + 1000)
    await fitted(images, 0)
    await fitted(images, 1)
    assert images.cached(A, "openai") is not None  # A is now the most recently used
    await fitted(images, 2)
    assert images.cached(B, "openai") is None
    assert images.cached(A, "openai") is not None
    assert images.cached(C, "openai") is not None
