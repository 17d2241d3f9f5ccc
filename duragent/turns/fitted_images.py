"""``FittedImages``: images fitted to a provider's limits, kept in memory for the next requests.

An image a model that can see may be sent is read from the session's blobs and fitted
(``llm.images.fit_image``) in a worker thread, once: fitted images are kept by (content
hash, formula), least recently used first out, within ``FITTED_CACHE_BYTES``, so a long chat
does not fit its photos again at every turn (and two turns asking for the same image at once
fit it once). An image Pillow refuses is kept as its reason (the model is told it could not
be shown). One per turn runner, shared by its sessions (``turns.images.Attachments``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable

from duragent.errors import ImageRejectedError
from duragent.llm.image_size import FittedImage, ImageFormula
from duragent.store import AttachmentNotFoundError

__all__ = ["FITTED_CACHE_BYTES", "Fitted", "FittedImages"]

FITTED_CACHE_BYTES = 64 * 1024 * 1024
"""Fitted images kept in memory at most (a fitted photo is ~0.1–0.5 MB)."""

_MISSING = "its file is missing from the session"

Fitted = FittedImage | str
"""A fitted image, or why it cannot be shown (a sentence)."""


class FittedImages:
    """Images fitted to a provider, by (content hash, formula): an LRU bounded by bytes."""

    def __init__(self, max_bytes: int = FITTED_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[str, ImageFormula], Fitted] = OrderedDict()
        self._bytes = 0
        self._running: dict[tuple[str, ImageFormula], asyncio.Future[Fitted]] = {}
        self.fits = 0
        """Images fitted so far (a cached one is not fitted again)."""

    @property
    def size(self) -> int:
        """Bytes of fitted images kept."""
        return self._bytes

    def cached(self, sha256: str, formula: ImageFormula) -> Fitted | None:
        """The image fitted already, if it is kept (it becomes the most recently used).

        What a request asks for most: its recent images, fitted at an earlier turn. Looked
        up without a task or a wait, so a turn whose images are all kept never yields for
        them.
        """
        key = (sha256, formula)
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    async def get(self, sha256: str, formula: ImageFormula, read: Callable[[], bytes]) -> Fitted:
        """The image with this hash fitted for ``formula`` (``read`` gives its bytes).

        Fitted in a worker thread; ``OSError`` (the bytes could not be read) is raised and
        nothing is kept, so the next request tries again.
        """
        key = (sha256, formula)
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
            return found
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(asyncio.to_thread(self._fit, read, formula))
            self._running[key] = running
            running.add_done_callback(lambda done: self._done(key, done))
        return await asyncio.shield(running)  # a waiter cancelled leaves the fit to the others

    def _fit(self, read: Callable[[], bytes], formula: ImageFormula) -> Fitted:
        from duragent.llm.images import fit_image  # Pillow loads with the first image, not at start

        try:
            data = read()
        except AttachmentNotFoundError:
            return _MISSING
        self.fits += 1
        try:
            return fit_image(data, formula)
        except ImageRejectedError as exc:
            return str(exc)

    def _done(self, key: tuple[str, ImageFormula], done: asyncio.Future[Fitted]) -> None:
        self._running.pop(key, None)
        if done.cancelled() or done.exception() is not None:
            return
        fitted = done.result()
        size = len(fitted.data) if isinstance(fitted, FittedImage) else len(fitted)
        if size > self.max_bytes:
            return
        self._items[key] = fitted
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, old = self._items.popitem(last=False)
            self._bytes -= len(old.data) if isinstance(old, FittedImage) else len(old)
