"""A turn's attachments in its requests: images loaded, fitted off the event loop, cached.

``context.attachments`` decides, purely, what each message with attachments reads as in a
request and which images may be sent; this module does the I/O it needs, per turn
(``TurnAttachments``, the loop's ``LoopContext.attachments``):

- an image a model that can see may be sent is read from the session's blobs and fitted to
  the provider's limits in a worker thread, once (``turns.fitted_images``: kept by content
  hash, within ``FITTED_CACHE_BYTES``); one fitted already is taken from that cache without
  a task or a wait;
- a recent text document's text is read to be inlined (``attachment_lines.inline_text``);
- each attachment a line names a path for is copied, once, to that path in the agent's
  folder (``files/<session id>/…``, ``agents.chat_files``), so the path the model is told
  is one its tools can open; a copy that is there costs a ``stat``, no thread.

Per session, the ``AttachmentView`` (what was decided, by message identity) is kept between
turns (``Attachments``, one per runner, ``VIEWS`` sessions at most), with the image forms the
last request could show (``AttachmentView.shown``: no image bytes beyond the shared cache's).

A turn prepares its requests twice before its first model call (the summaries tier sizes the
history as requests carry it, then the call is fitted) and the tier asks for the carried
history in between: while the history, the turn and the view are as the last ``prepare``
left them and its images are still the cache's, the same answer is given again, with no
message looked at (``_Prepared``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from duragent.errors import DuragentError
from duragent.llm.image_size import FittedImage, formula_of
from duragent.llm.types import ImageMessage
from duragent.llm.vision import sees_by_name
from duragent.store import AttachmentStorage
from duragent.turns.fitted_images import FITTED_CACHE_BYTES, Fitted, FittedImages

__all__ = ["FITTED_CACHE_BYTES", "VIEWS", "Attachments", "FittedImages", "TurnAttachments"]

log = logging.getLogger(__name__)

VIEWS = 64
"""Sessions whose attachment view is kept between turns (as ``turns.context.HISTORY_CACHES``)."""

_UNREADABLE = "its file could not be read just now"


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
        self._files = str(files) if files is not None else None  # joined as text: no Path per file
        self._candidates: dict[Message, ImageMessage] = {}
        # what ``prepare`` found for each message: was it recent, and its states
        self._states: dict[Message, tuple[bool, list[AttachmentState]]] = {}
        self._turn: Sequence[Message] = ()
        self._last: _Prepared | None = None

    async def prepare(
        self, history: Sequence[Message], turn: Sequence[Message]
    ) -> tuple[Sequence[Message], Sequence[Message]]:
        """``history`` and ``turn`` with every message with attachments in its text form.

        The session's own lists come back when none has any (nothing is copied).
        """
        self._turn = turn
        last = self._last
        if last is not None and last.holds(history, turn, self._view) and last.cached(self):
            return last.answer
        self._last = None
        plan = self._view.plan(history, turn, self.policy)
        if not plan.work:
            self._candidates = {}
            return plan.finish()
        used: list[tuple[str, Fitted]] | None = []  # None: an image was not the cache's
        for work in plan.work:
            states, loads = self._states_of(work, used)
            if loads:
                used = await self._load(states, loads, used)
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
        answer = plan.finish()
        if used is not None:
            ends, commits = _ends(history, turn), self._view.commits
            self._last = _Prepared(history, turn, ends, commits, used, answer)
        return answer

    def carried(self, history: Sequence[Message]) -> Sequence[Message]:
        """``history`` as ``prepare`` last carried it, without I/O (the summaries tier's view).

        The tier sizes and cuts the history as requests carry it, and asks the session's
        history cache with the same messages ``fit_request`` does. A message ``prepare`` has
        not seen (none, in a turn) leaves ``history`` as it is.
        """
        last = self._last
        if last is not None and last.holds(history, self._turn, self._view):
            return last.answer[0]  # what a plan would give again (its states are the same)
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

    def _states_of(
        self, work: Work, used: list[tuple[str, Fitted]] | None
    ) -> tuple[list[AttachmentState], list[tuple[int, Attachment]]]:
        """Its attachments' states, and the images still to fit (their states are left None).

        An image fitted already is taken from the cache here, without a task (and noted in
        ``used``): only those to fit (new, or dropped from the cache) are awaited (``_load``).
        """
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
            elif (image := self._images.cached(attachment.sha256, policy.formula)) is not None:
                states[i] = _state(image)
                if used is not None:
                    used.append((attachment.sha256, image))
            else:
                loads.append((i, attachment))
        return states, loads

    async def _load(
        self,
        states: list[AttachmentState],
        loads: list[tuple[int, Attachment]],
        used: list[tuple[str, Fitted]] | None,
    ) -> list[tuple[str, Fitted]] | None:
        """Fit the images ``_states_of`` left to fit (at once) and put their states in place.

        ``used`` with them, or None when one could not be read (nothing kept: the next
        request tries again).
        """
        if len(loads) == 1:
            fitted = [await self._fitted(loads[0][1])]
        else:
            fitted = await asyncio.gather(*(self._fitted(a) for _, a in loads))
        for (i, attachment), image in zip(loads, fitted, strict=True):
            states[i] = _state(image)
            if image is _UNREADABLE:
                used = None
            elif used is not None:
                used.append((attachment.sha256, image))
        return used

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
        """Copy each attachment a line names a path for to that path, unless it is there.

        Whether it is there is a ``stat`` on the loop (a few µs); a worker thread is asked
        only for a copy to make, so a message whose copies exist costs no thread hop (one
        costs ~0.1 ms of CPU and two context switches).
        """
        folder = self._files
        if folder is None or not self.policy.folder:
            return
        wanted = [
            (a.sha256, dest)
            for a in attachments
            if not _transcribed(a) and not _copied(dest := f"{folder}/{chat_file(a)}")
        ]
        if wanted:
            await asyncio.to_thread(_copy_missing, self._storage, wanted)


@dataclass(slots=True)
class _Prepared:
    """A ``prepare``'s answer and what it was given, to give it again (module docstring)."""

    history: Sequence[Message]
    turn: Sequence[Message]
    ends: tuple[int, Message | None, int, Message | None]
    commits: int  # the view's, once this was decided
    used: list[tuple[str, Fitted]]  # the images it took from the cache
    answer: tuple[Sequence[Message], Sequence[Message]]

    def holds(
        self, history: Sequence[Message], turn: Sequence[Message], view: AttachmentView
    ) -> bool:
        """The same lists, grown or cut by nothing, and no other plan finished since.

        A history only ever loses messages at its start and gains them at its end (as
        ``AttachmentView`` assumes): its length and last message tell it unchanged.
        """
        if history is not self.history or turn is not self.turn or view.commits != self.commits:
            return False
        size, last, turn_size, turn_last = self.ends
        ends = _ends(history, turn)
        return ends[0] == size and ends[1] is last and ends[2] == turn_size and ends[3] is turn_last

    def cached(self, owner: TurnAttachments) -> bool:
        """Whether each of its images is still the cache's (then none would be read again)."""
        images, formula = owner._images, owner.policy.formula
        return all(images.cached(sha256, formula) is image for sha256, image in self.used)


def _ends(
    history: Sequence[Message], turn: Sequence[Message]
) -> tuple[int, Message | None, int, Message | None]:
    return (len(history), history[-1] if history else None, len(turn), turn[-1] if turn else None)


@functools.lru_cache(maxsize=64)
def _sees(name: str) -> bool:
    """``vision.sees_by_name``, once per model name (it tries a table of patterns)."""
    return sees_by_name(name)


def _state(image: Fitted) -> AttachmentState:
    """A fitted image's state: itself, or the note saying why it cannot be shown."""
    return image if isinstance(image, FittedImage) else rejected_note(image)


def _transcribed(attachment: Attachment) -> bool:
    """A voice note or audio shown as its transcript (its line names no path)."""
    return attachment.kind in (AttachmentKind.VOICE, AttachmentKind.AUDIO) and bool(
        attachment.transcript and attachment.transcript.strip()
    )


def _copied(dest: str) -> bool:
    """Whether the chat's copy is there.

    An empty file is the remains of an unsynced copy on a machine that lost power
    (``export_bytes``): it is made again.
    """
    try:
        return os.stat(dest).st_size > 0
    except FileNotFoundError:
        return False


def _copy_missing(storage: AttachmentStorage, wanted: list[tuple[str, str]]) -> None:
    for sha256, name in wanted:
        if _copied(name):
            continue
        dest = Path(name)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            storage.export(sha256, dest)
        except (OSError, DuragentError) as exc:
            log.warning("attachment %s could not be copied to %s: %s", sha256, dest, exc)
