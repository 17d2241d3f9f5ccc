"""A turn's attachments in its requests: images loaded, fitted off the event loop, cached.

``context.attachments`` decides, purely, what each message with attachments reads as in a
request and which images may be sent; this module does the I/O it needs, per turn
(``TurnAttachments``, the loop's ``LoopContext.attachments``):

- an image a model that can see may be sent is read from the session's blobs and fitted to
  the provider's limits (``llm.images.fit_image``) in a worker thread, once: ``FittedImages``
  keeps fitted images by (content hash, formula), least recently used first out, within
  ``FITTED_CACHE_BYTES``, so a long chat does not fit its photos again at every turn (and two
  turns asking for the same image at once fit it once). An image Pillow refuses is kept as
  its reason (the model is told it could not be shown);
- a recent text document's text is read to be inlined (``attachment_lines.inline_text``);
- each attachment a line names a path for is copied, once, to that path in the agent's
  folder (``files/<session id>/…``, ``agents.chat_files``), so the path the model is told
  is one its tools can open.

Per session, the ``AttachmentView`` (what was decided, by message identity) is kept between
turns (``Attachments``, one per runner, ``VIEWS`` sessions at most); the image forms of the
messages (``ImageMessage``, with their bytes) live for one turn only, so a session keeps no
image bytes between turns beyond the shared cache's bound.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from duragent.agents import Agent
from duragent.agents.chat_files import FILES_FOLDER, chat_file, chat_files_dir
from duragent.context.attachment_lines import (
    BLIND,
    AttachmentPolicy,
    AttachmentState,
    aged_note,
    inline_text,
    rejected_note,
)
from duragent.context.attachments import AttachmentView, Work, image_message, show_images
from duragent.context.budget import BudgetReport, BudgetSettings
from duragent.context.tokens import TokenCounter
from duragent.core.attachments import Attachment, AttachmentKind
from duragent.core.messages import Message
from duragent.errors import DuragentError, ImageRejectedError
from duragent.llm.image_size import FittedImage, ImageFormula, formula_of
from duragent.llm.types import ImageMessage
from duragent.llm.vision import sees_by_name
from duragent.store import AttachmentNotFoundError, AttachmentStorage

__all__ = ["FITTED_CACHE_BYTES", "VIEWS", "Attachments", "FittedImages", "TurnAttachments"]

log = logging.getLogger(__name__)

FITTED_CACHE_BYTES = 64 * 1024 * 1024
"""Fitted images kept in memory at most (a fitted photo is ~0.1–0.5 MB)."""

VIEWS = 64
"""Sessions whose attachment view is kept between turns (as ``turns.context.HISTORY_CACHES``)."""

_MISSING = "its file is missing from the session"
_UNREADABLE = "its file could not be read just now"

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


class Attachments:
    """Each session's attachment view, and the shared cache of fitted images (per runner)."""

    def __init__(
        self,
        storage: Callable[[str], AttachmentStorage],
        images: FittedImages | None = None,
    ) -> None:
        self._storage = storage
        self.images = images if images is not None else FittedImages()
        self._views: OrderedDict[str, AttachmentView] = OrderedDict()

    def _view(self, session_id: str) -> AttachmentView:
        view = self._views.pop(session_id, None) or AttachmentView()
        self._views[session_id] = view
        while len(self._views) > VIEWS:
            self._views.popitem(last=False)
        return view

    def for_turn(
        self, session_id: str, agent: Agent, budget: BudgetSettings, counter: TokenCounter
    ) -> TurnAttachments:
        """What one turn of ``agent`` in ``session_id`` shows of its messages' attachments."""
        model = agent.model
        policy = AttachmentPolicy(
            sees=model.vision if model.vision is not None else _sees(model.name),
            formula=formula_of(model.provider),
            turns=model.attachment_turns,
            folder=f"{FILES_FOLDER}/{session_id}",
            file_name=chat_file,
            inline_tokens=budget.max_tool_result_tokens,
            strategy=budget.truncation,
        )
        return TurnAttachments(
            self._view(session_id),
            policy,
            self.images,
            self._storage(session_id),
            counter,
            files=chat_files_dir(agent.directory, session_id),
        )


class TurnAttachments:
    """One turn's attachments in its requests (module docstring)."""

    def __init__(
        self,
        view: AttachmentView,
        policy: AttachmentPolicy,
        images: FittedImages,
        storage: AttachmentStorage,
        counter: TokenCounter,
        *,
        files: Path | None = None,
    ) -> None:
        self._view = view
        self.policy = policy
        self._images = images
        self._storage = storage
        self._counter = counter
        self._files = files
        self._candidates: dict[Message, ImageMessage] = {}
        # what ``prepare`` found for each message: was it recent, and its states
        self._states: dict[Message, tuple[bool, list[AttachmentState]]] = {}
        self._turn: Sequence[Message] = ()

    async def prepare(
        self, history: Sequence[Message], turn: Sequence[Message]
    ) -> tuple[Sequence[Message], Sequence[Message]]:
        """``history`` and ``turn`` with every message with attachments in its text form.

        The session's own lists come back when none has any (nothing is copied).
        """
        self._turn = turn
        plan = self._view.plan(history, turn, self.policy)
        if not plan.work:
            self._candidates = {}
            return plan.finish()
        for work in plan.work:
            states = await self._states_of(work)
            self._states[work.message] = (work.recent(self.policy), states)
            if not plan.known(work, states):
                inlined = await self._inlined(work, plan.wants(work))
                await self._copy_out(work.message.attachments)
                plan.place(work, states, inlined)
        kept, shown = self._view.shown, {}
        for pending, (text, fitted) in plan.candidates.items():
            form = kept.get(pending)
            if form is None or form.images != fitted or form.content != text:
                form = image_message(text, fitted, self.policy)
            shown[pending] = form
        self._view.shown = self._candidates = shown  # only this request's: bounded
        return plan.finish()

    def carried(self, history: Sequence[Message]) -> Sequence[Message]:
        """``history`` as ``prepare`` last carried it, without I/O (the summaries tier's view).

        The tier sizes and cuts the history as requests carry it, and asks the session's
        history cache with the same messages ``fit_request`` does. A message ``prepare`` has
        not seen (none, in a turn) leaves ``history`` as it is.
        """
        plan = self._view.plan(history, self._turn, self.policy)
        for work in plan.work:
            found = self._states.get(work.message)
            if found is None or found[0] != work.recent(self.policy):
                return history  # not seen, or older since: the next ``prepare`` decides
            if not plan.known(work, found[1]):
                return history
        return plan.finish()[0]

    def show(self, messages: list[Message], report: BudgetReport, limit: int) -> list[Message]:
        """The fitted ``messages`` with the images that fit the room they left (``show_images``)."""
        return show_images(messages, report, self._candidates, self._counter, limit)

    async def _states_of(self, work: Work) -> list[AttachmentState]:
        policy = self.policy
        states: list[AttachmentState] = [None] * len(work.message.attachments)
        loads: list[tuple[int, Attachment]] = []
        for i, attachment in enumerate(work.message.attachments):
            if attachment.kind is not AttachmentKind.IMAGE:
                continue
            if not policy.sees:
                states[i] = BLIND
            elif not work.recent(policy):
                states[i] = aged_note(policy.turns)
            else:
                loads.append((i, attachment))
        if loads:
            fitted = await asyncio.gather(*(self._fitted(a) for _, a in loads))
            for (i, _), image in zip(loads, fitted, strict=True):
                states[i] = image if isinstance(image, FittedImage) else rejected_note(image)
        return states

    async def _fitted(self, attachment: Attachment) -> Fitted:
        storage, sha256 = self._storage, attachment.sha256
        try:
            return await self._images.get(sha256, self.policy.formula, lambda: storage.read(sha256))
        except (OSError, DuragentError) as exc:
            log.warning("attachment %s could not be read for a request: %s", sha256, exc)
            return _UNREADABLE

    async def _inlined(self, work: Work, wants: tuple[bool, ...]) -> list[str | None]:
        inlined: list[str | None] = [None] * len(wants)
        for i, (attachment, wanted) in enumerate(zip(work.message.attachments, wants, strict=True)):
            if not wanted:
                continue
            try:
                data = await asyncio.to_thread(self._storage.read, attachment.sha256)
            except (OSError, DuragentError) as exc:
                log.warning("document %s could not be read to inline: %s", attachment.sha256, exc)
                continue
            inlined[i] = inline_text(data, self.policy, self._counter)
        return inlined

    async def _copy_out(self, attachments: Sequence[Attachment]) -> None:
        """Copy each attachment a line names a path for to that path, unless it is there."""
        folder = self._files
        if folder is None or not self.policy.folder:
            return
        wanted = [(a.sha256, folder / chat_file(a)) for a in attachments if not _transcribed(a)]
        if wanted:
            await asyncio.to_thread(_copy_missing, self._storage, wanted)


@functools.lru_cache(maxsize=64)
def _sees(name: str) -> bool:
    """``vision.sees_by_name``, once per model name (it tries a table of patterns)."""
    return sees_by_name(name)


def _transcribed(attachment: Attachment) -> bool:
    """A voice note or audio shown as its transcript (its line names no path)."""
    return attachment.kind in (AttachmentKind.VOICE, AttachmentKind.AUDIO) and bool(
        attachment.transcript and attachment.transcript.strip()
    )


def _copied(dest: Path) -> bool:
    """Whether the chat's copy is there.

    An empty file is the remains of an unsynced copy on a machine that lost power
    (``export_bytes``): it is made again.
    """
    try:
        return dest.stat().st_size > 0
    except FileNotFoundError:
        return False


def _copy_missing(storage: AttachmentStorage, wanted: list[tuple[str, Path]]) -> None:
    for sha256, dest in wanted:
        if _copied(dest):
            continue
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            storage.export(sha256, dest)
        except (OSError, DuragentError) as exc:
            log.warning("attachment %s could not be copied to %s: %s", sha256, dest, exc)
