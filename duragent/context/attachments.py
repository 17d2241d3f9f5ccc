"""A session's messages with attachments as requests carry them, and images in the room left.

Every user message that carried attachments (``Message.attachments``) is replaced, in the
history and the turn a request is fitted from, by a text message of the same role
(``attachment_lines.attachment_text``: a line per attachment, then the message's text). The
replacement is the same object from request to request while nothing about it changes, so
the session's ``HistoryCache``, the token counter and the providers' fragment caches keep
working by identity (``AttachmentView``); it changes when its images age past
``attachment_turns`` (once), or when the agent's settings change.

Images and the budget (``specs/202612051700.vision.md``): Layer 2 fits the history with every
image a model could be sent as its placeholder text (``LEFT_OUT``: no room). ``show_images``
then replaces those messages, newest first, by their ``llm.types.ImageMessage`` form (the
images as native parts, the text without their lines) while the request's free room,
``limit - request_tokens``, covers the difference in tokens (``TokenCounter.count_message``
counts an ``ImageMessage``'s ``image_tokens``). So:

- a request never passes ``limit``, and ``request_tokens`` stays exact (it grows by exactly
  each difference);
- images give way before history: history was fitted without them, and an image that does
  not fit the room left is the placeholder, not a reason to leave out a message;
- at most ``MAX_IMAGES`` images and ``MAX_IMAGE_BYTES`` of base64 go in one request (the
  providers' request limits: Anthropic 32 MB a request, OpenAI 50 MB of images).

Cost: a session without attachments pays a position lookup per request (the last message
seen, found again near where it was: the window only gains messages at its end and loses
them at its start, as ``HistoryCache`` assumes) and gets its own lists back; with attachments,
the messages already decided for good (older than ``attachment_turns``) are carried over
from the last request, and only the recent ones and the new ones are looked at again.
"""

from __future__ import annotations

import operator
import weakref
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, islice, repeat

from duragent.context.attachment_lines import (
    LEFT_OUT,
    AttachmentPolicy,
    AttachmentState,
    attachment_text,
    inlines,
)
from duragent.context.budget import BudgetReport
from duragent.context.tokens import TokenCounter
from duragent.core.messages import Message, Role, is_steering
from duragent.llm.image_size import FittedImage, encoded_length, image_tokens
from duragent.llm.types import ImageMessage

__all__ = [
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "AttachmentView",
    "Plan",
    "Work",
    "image_message",
    "show_images",
]

MAX_IMAGES = 20
"""Images one request carries at most (Anthropic takes 100, and limits each to 2000 px past 20)."""

MAX_IMAGE_BYTES = 24 * 1024 * 1024
"""Base64 bytes of images one request carries at most (under Anthropic's 32 MB a request)."""

_ATTACHMENTS = operator.attrgetter("attachments")
_ROLE = operator.attrgetter("role")


def _persons(messages: Sequence[Message], lo: int, hi: int) -> int:
    """How many of ``messages[lo:hi]`` a person sent (user messages that are not steering).

    Roles are compared in C; only the user messages are looked at in Python.
    """
    if lo >= hi:
        return 0
    roles = list(map(_ROLE, islice(messages, lo, hi)))
    users = roles.count(Role.USER)
    if not users:
        return 0
    mine = compress(islice(messages, lo, hi), map(operator.is_, roles, repeat(Role.USER)))
    return users - sum(map(is_steering, mine))


@dataclass(slots=True)
class Work:
    """A message with attachments whose request form is decided this request.

    ``age``: person messages after it (0: it started this turn); ``place``: its index in
    the history, or in the turn when ``in_turn``.
    """

    message: Message
    age: int
    place: int
    in_turn: bool = False

    def recent(self, policy: AttachmentPolicy) -> bool:
        """Within ``attachment_turns``: images may be sent, a text file's text is inlined."""
        return self.age < policy.turns


@dataclass(slots=True)
class _Rendered:
    key: tuple[object, ...]
    message: Message  # the text form (fitted images: a line saying there was no room)
    shown: str | None  # the text beside its images when they are sent (None: none to send)


def _state_key(state: AttachmentState) -> object:
    return LEFT_OUT if isinstance(state, FittedImage) else state


class AttachmentView:
    """One session's messages with attachments, as requests carry them (module docstring)."""

    __slots__ = (
        "_anchor",
        "_base",
        "_final",
        "_hits",
        "_length",
        "_out",
        "_policy",
        "_renders",
        "commits",
        "shown",
    )

    def __init__(self) -> None:
        self._policy: AttachmentPolicy | None = None
        self._anchor: Message | None = None  # the last history's last message
        self._length = 0  # and its length
        # where its messages with attachments are, counted from the first message the view
        # saw (its index plus ``_base``, the messages dropped from the front since): a
        # request drops the hits before its history's start, it does not renumber them all
        self._hits: list[int] = []
        self._base = 0
        self._final = 0  # hits[:final] are decided for good, and in ``_out``
        self._out: list[Message] | None = None  # it as carried (None: it had no hits)
        self._renders: weakref.WeakKeyDictionary[Message, _Rendered] = weakref.WeakKeyDictionary()
        self.shown: dict[Message, ImageMessage] = {}
        """The image forms the last request could show, by their text form: the same objects
        from request to request while their images do not change, so the token counter's and
        the providers' caches (by identity) find them (``TurnAttachments.prepare``)."""
        self.commits = 0
        """Plans finished so far: a caller's copy of the last plan's answer holds while this
        has not changed (and its inputs have not: ``TurnAttachments.prepare``)."""

    def plan(
        self, history: Sequence[Message], turn: Sequence[Message], policy: AttachmentPolicy
    ) -> Plan:
        """What this request must decide; ``Plan.finish`` gives the history and turn to fit."""
        same = policy == self._policy
        dropped, start = self._continues(history) if same else (None, 0)
        if dropped is None:
            hits: list[int] = []
            base, final, out = 0, 0, None
        else:
            base = self._base + dropped
            first = bisect_left(self._hits, base)  # the hits still in the history
            hits = self._hits[first:]
            final = max(0, self._final - first)
            out = self._out[dropped:] if self._out is not None else None
        end = base + len(history)
        hits.extend(compress(range(base + start, end), map(_ATTACHMENTS, history[start:])))
        turn_hits = list(compress(count(), map(_ATTACHMENTS, turn)))
        work = [Work(turn[t], _persons(turn, t + 1, len(turn)), t, True) for t in turn_hits]
        if hits:
            if out is None:
                out = list(history)
            else:
                out.extend(history[len(out) :])
            final = self._ages(history, turn, hits, base, final, policy, work)
        else:
            final, out = 0, None
        turn_out = list(turn) if turn_hits else None
        return Plan(self, policy, history, turn, work, out, turn_out, (hits, base, final))

    def _commit(self, policy: AttachmentPolicy, history: Sequence[Message], plan: Plan) -> None:
        """Keep what ``plan`` decided, for the next request (``Plan.finish``)."""
        self._policy = policy
        self._anchor = history[-1] if history else None
        self._length = len(history)
        self._hits, self._base, self._final = plan._found
        self._out = plan._history_out
        self.commits += 1

    def _continues(self, history: Sequence[Message]) -> tuple[int | None, int]:
        """(messages dropped from the front since the last request, first new index).

        None when ``history`` does not continue the last one: everything is looked at again.
        """
        anchor = self._anchor
        if anchor is None or not history:
            return None, 0
        for pos in range(min(self._length, len(history)) - 1, -1, -1):
            if history[pos] is anchor:
                return self._length - 1 - pos, pos + 1
        return None, 0

    @staticmethod
    def _ages(
        history: Sequence[Message],
        turn: Sequence[Message],
        hits: list[int],
        base: int,
        final: int,
        policy: AttachmentPolicy,
        work: list[Work],
    ) -> int:
        """Add the undecided history hits to ``work`` with their ages; the new ``final``.

        Newest first: the first hit at least ``policy.turns`` old ends the counting, and it
        and every older one are decided for good (a message only ever gets older).
        """
        persons = _persons(turn, 0, len(turn))
        end = len(history)
        new_final = final
        for k in range(len(hits) - 1, final - 1, -1):
            i = hits[k] - base
            if new_final == final:
                persons += _persons(history, i + 1, end)
                end = i + 1
                if persons >= policy.turns:
                    new_final = k + 1
            work.append(Work(history[i], persons, i))
        return new_final


@dataclass(slots=True)
class Plan:
    """One request's messages with attachments to decide (``work``), and the lists to fit.

    For each work item, its attachments' states (``AttachmentState``: fitted images for
    those that may be sent) go to ``known``; when it answers False, the texts ``wants``
    names are read and ``place`` is called. ``finish`` then gives the history and turn to
    fit, and ``candidates`` the messages ``show_images`` may give their images back.
    """

    view: AttachmentView
    policy: AttachmentPolicy
    history: Sequence[Message]
    turn: Sequence[Message]
    work: list[Work]
    _history_out: list[Message] | None
    _turn_out: list[Message] | None
    _found: tuple[list[int], int, int]  # the history's hits, their base, how many are decided
    candidates: dict[Message, tuple[str, tuple[FittedImage, ...]]] = field(default_factory=dict)
    _placed: int = 0

    def wants(self, work: Work) -> tuple[bool, ...]:
        """Which of its attachments carry their text (recent text documents)."""
        recent = work.recent(self.policy)
        return tuple(recent and inlines(a, self.policy) for a in work.message.attachments)

    def _key(self, work: Work, states: Sequence[AttachmentState]) -> tuple[object, ...]:
        return (self.policy, tuple(map(_state_key, states)), self.wants(work))

    def known(self, work: Work, states: Sequence[AttachmentState]) -> bool:
        """Whether its form for these states is known already (then it is placed)."""
        rendered = self.view._renders.get(work.message)
        if rendered is None or rendered.key != self._key(work, states):
            return False
        self._place(work, rendered, states)
        return True

    def place(
        self, work: Work, states: Sequence[AttachmentState], inlined: Sequence[str | None]
    ) -> None:
        """Decide its form from its states and inlined texts (one per attachment)."""
        message, policy = work.message, self.policy
        text = attachment_text(message, policy, states, inlined)
        fitted = any(isinstance(s, FittedImage) for s in states)
        shown = attachment_text(message, policy, states, inlined, shown=True) if fitted else None
        rendered = _Rendered(
            self._key(work, states), Message(role=message.role, content=text), shown
        )
        self.view._renders[message] = rendered
        self._place(work, rendered, states)

    def _place(self, work: Work, rendered: _Rendered, states: Sequence[AttachmentState]) -> None:
        out = self._turn_out if work.in_turn else self._history_out
        assert out is not None  # a work item is where a hit was
        out[work.place] = rendered.message
        self._placed += 1
        if rendered.shown is not None:
            images = tuple(s for s in states if isinstance(s, FittedImage))
            self.candidates[rendered.message] = (rendered.shown, images)

    def finish(self) -> tuple[Sequence[Message], Sequence[Message]]:
        """The history and turn to fit (the session's own lists when nothing changed).

        Every work item must have been placed; the view keeps this plan for the next
        request only then (a plan left unfinished changes nothing).
        """
        if self._placed != len(self.work):
            raise ValueError("a plan is finished once each of its messages is placed")
        self.view._commit(self.policy, self.history, self)
        history = self._history_out if self._history_out is not None else self.history
        turn = self._turn_out if self._turn_out is not None else self.turn
        return history, turn


def image_message(
    text: str, images: tuple[FittedImage, ...], policy: AttachmentPolicy
) -> ImageMessage:
    """The user message that carries ``images`` natively beside ``text``, with their cost."""
    tokens = sum(image_tokens(policy.formula, image.width, image.height) for image in images)
    return ImageMessage(role=Role.USER, content=text, images=images, image_tokens=tokens)


def show_images(
    messages: list[Message],
    report: BudgetReport,
    candidates: Mapping[Message, ImageMessage],
    counter: TokenCounter,
    limit: int,
) -> list[Message]:
    """``messages`` with the images of ``candidates`` that fit what the request left free.

    Newest first; a message's images go together or not at all. ``report.request_tokens``
    grows by what each costs more than its placeholder, so it stays exact; the images sent
    and left out are counted in ``report``.
    """
    if not candidates:
        return messages
    places = list(compress(count(), map(candidates.__contains__, messages)))
    if not places:
        return messages
    out = list(messages)
    room = limit - report.request_tokens
    sent = size = 0
    for i in reversed(places):
        pending = messages[i]
        shown = candidates[pending]
        n = len(shown.images)
        b = sum(encoded_length(len(image.data)) for image in shown.images)
        more = counter.count_message(shown) - counter.count_message(pending)
        if more <= room and sent + n <= MAX_IMAGES and size + b <= MAX_IMAGE_BYTES:
            out[i] = shown
            room -= more
            sent += n
            size += b
            report.request_tokens += more
        else:
            report.images_left_out += n
    report.images_sent += sent
    return out
