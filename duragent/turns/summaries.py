"""The summaries tier in a turn: summarise before the first call, and on provider overflow.

``SummaryTier`` is what the loop sees (``LoopContext.summaries``): ``block`` renders the
reference block (pins, task, current summary) that ``fit_request`` sends, quoted, as the
first user-role message (``context.quoting``: never system text); ``before_turn``
summarises the oldest history when it passes the trigger, sized as requests carry it
(``context.summary_plan``; at most ``ROUNDS_PER_TURN`` rounds); ``on_overflow`` does it
unconditionally when the provider said "context length exceeded", so the loop can retry
once with a smaller history.

Order of a summary (the durability rule of ``specs/202611240835.summaries.md``): the model
writes it → the ``summary`` event is fsync'd and applied by the session actor (the window
loses the summarised messages) and ``state.yaml`` is written → only then does this turn's
history drop them. A SIGKILL before the fsync leaves the old state (the summary is simply
written again by a later turn); after it, recovery replays the event and never asks a model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from duragent.agents import Agent
from duragent.agents.chat_files import FILES_FOLDER, chat_file
from duragent.context.attachment_lines import described
from duragent.context.budget import BudgetSettings
from duragent.context.history_index import HistoryCache
from duragent.context.quoting import RUNTIME_NOTE, quote
from duragent.context.summaries import (
    PinnedTooLargeError,
    SummaryPlan,
    SummarySettings,
    check_new_pin,
    history_budget,
    pinned_cost,
    plan_summary,
    reference_block,
    summary_settings,
)
from duragent.context.tokens import TokenCounter
from duragent.context.window import context_window
from duragent.core.messages import Message, Usage
from duragent.errors import LLMError
from duragent.llm import LLMProvider
from duragent.llm.offline import OfflineProvider
from duragent.llm.retry import ResilientProvider
from duragent.observability.metrics import CallMeter
from duragent.session import SessionHandle
from duragent.session.memory import Pin
from duragent.session.memory_ops import MemoryView
from duragent.turns.sink import TurnSink
from duragent.turns.summariser import extractive_summary, write_summary

__all__ = ["ROUNDS_PER_TURN", "SummaryTier", "agent_summary_settings", "describe_summaries"]

log = logging.getLogger(__name__)

ROUNDS_PER_TURN = 2
"""Summaries one turn may write before its first call (each halves what is left at most)."""

SUMMARY_FRAME_TOKENS = 100
"""The block's header and intro and the summary's heading around the summary text (63
tokens by o200k, 90 by the estimating counter)."""

QUOTE_SHARE = 10
"""Quoting adds about a token a line (``context.quoting``): a summary of short bullet lines
grows by about a tenth (60 lines of ~11 tokens: +9 % by o200k, +7 % estimated)."""


def agent_summary_settings(agent: Agent, window: int) -> SummarySettings:
    """The tier's settings for ``agent`` (``spec.session.context.summaries`` + defaults)."""
    spec = agent.spec.session.context.summaries
    return summary_settings(
        window,
        enabled=spec.enabled,
        model=spec.model,
        threshold=spec.threshold,
        keep_recent=spec.keep_recent,
        max_summary_tokens=spec.max_summary_tokens,
        pinned_share=spec.pinned_share,
        pin_task=spec.pin_task,
    )


def describe_summaries(agent: Agent, window: int) -> str:
    """One line for ``doctor``, under the tier's: is the tier on, when, and who writes.

    Summaries are on by default, and each costs a model call, so the operator sees where the
    numbers came from; the offline model never writes one (``SummaryTier._summarise``), which
    this line says rather than letting a user think a model summarises.
    """
    settings = agent_summary_settings(agent, window)
    if not settings.enabled:
        return "summaries off (old history is only dropped)"
    if agent.model.provider == "offline":
        writer = "extractive (the offline model writes none)"
    else:
        writer = f"written by {settings.model or agent.model.name}"
    return (
        f"summaries on: from {round(settings.threshold * 100)} % of the history budget, keep "
        f"{round(settings.keep_recent * 100)} % verbatim, ≤ {settings.max_summary_tokens} "
        f"tokens, {writer}"
    )


class SummaryTier:
    """One turn's summaries tier (see module docstring)."""

    def __init__(
        self,
        *,
        session: SessionHandle,
        settings: SummarySettings,
        budget: BudgetSettings,
        counter: TokenCounter,
        memory: MemoryView,
        summariser: LLMProvider,
        summariser_model: str,
        price: Callable[[Usage], Usage] = lambda usage: usage,
        sink: TurnSink | None = None,
        meter: CallMeter | None = None,
        pin_room: int,
        history_cache: HistoryCache | None = None,
        spent: Callable[[Usage | None], None] | None = None,
        carried: Callable[[list[Message]], Sequence[Message]] | None = None,
    ) -> None:
        """The tier of one turn.

        ``spent``: told each summary call's usage (the chat's daily token quota);
        ``carried``: the history as requests carry it (messages with attachments as their
        text, ``turns.images``), message for message.
        """
        self._session = session
        self._carried = carried
        self._spent = spent
        self._pin_room = pin_room
        self._history_cache = history_cache  # the session's, as the loop's (``plan_summary``)
        self._meter = meter
        self.settings = settings
        self._budget = budget
        self._counter = counter
        self._memory = memory
        self._summariser = summariser
        self._model = summariser_model
        self._price = price
        self._sink = sink
        self._block: tuple[int, str] | None = None
        self.written = 0
        """Summaries this turn wrote (tests and the benchmark read it)."""

    # --- what every request carries ----------------------------------------------------------

    def block(self, fixed: int) -> str:
        """The reference block, given what the system prompt and tools cost (``fixed``)."""
        if self._block is not None and self._block[0] == fixed:
            return self._block[1]
        text = self._render(self._memory, fixed)
        self._block = (fixed, text)
        return text

    def _render(self, memory: MemoryView, fixed: int) -> str:
        """The block; ``PinnedTooLargeError`` naming each pin when they outgrew their room.

        The room is the agent's (``turns.pins``), not this turn's ``fixed``: a pin accepted
        against it fits every turn of an unchanged agent.
        """
        summary = memory.summary
        try:
            return reference_block(
                summary=summary.text if summary else None,
                round_=summary.round if summary else 0,
                task=memory.task if self.settings.pin_task and self.settings.enabled else None,
                pins=[(p.kind, p.text) for p in memory.pins],
                counter=self._counter,
                pinned_budget=self._pin_room,
            )
        except PinnedTooLargeError as exc:
            sizes = [
                (p.pin_id, pinned_cost([(p.kind, p.text)], self._counter)) for p in memory.pins
            ]
            raise PinnedTooLargeError(
                exc.tokens, exc.share, pins=sizes, session_id=self._session.session_id
            ) from None

    def check_pin(self, text: str) -> None:
        """Raise ``PinRefusedError`` when pinning ``text`` would pass the pins' room."""
        pins = [(p.kind, p.text) for p in self._memory.pins]
        check_new_pin(pins, "decision", text, self._counter, self._pin_room, self._budget.window)

    def pinned(self, kind: str, text: str, pin_id: str) -> None:
        """A pin was recorded during the turn: the next request carries it."""
        pin = Pin(pin_id=pin_id, kind=kind, text=text, source="agent")
        self._memory = replace(self._memory, pins=(*self._memory.pins, pin))
        self._block = None

    # --- when to summarise ---------------------------------------------------------------------

    async def before_turn(self, history: list[Message], fixed: int) -> None:
        """Summarise the oldest history while it passes the threshold (``ROUNDS_PER_TURN``)."""
        if not self.settings.enabled:
            return
        for _ in range(ROUNDS_PER_TURN):
            plan = self._plan(history, fixed, force=False)
            if plan is None or not await self._summarise(history, plan):
                return

    async def on_overflow(self, history: list[Message], fixed: int) -> bool:
        """The provider said "too long": summarise what can be; True when history shrank."""
        if not self.settings.enabled:
            return False
        plan = self._plan(history, fixed, force=True)
        return plan is not None and await self._summarise(history, plan)

    def _plan(self, history: list[Message], fixed: int, *, force: bool) -> SummaryPlan | None:
        """The plan, sized as requests carry the history (``context.summary_plan``)."""
        block = self.block(fixed)
        # with a block, the system prompt ends with the runtime's note (``fit_request``)
        reference = self._counter.count_text(block) + self._note() if block else 0
        budget = history_budget(self._budget, fixed + reference)
        after = history_budget(self._budget, fixed + reference + self._block_growth())
        summary = self._memory.summary
        return plan_summary(
            self._carried(history) if self._carried is not None else history,
            self._counter,
            budget,
            self.settings,
            force=force,
            index=self._history_cache,
            growth=budget - after,
            prune=self._budget.prune,
            previous=self._counter.count_text(summary.text) if summary else 0,
        )

    def _block_growth(self) -> int:
        """What the block may grow by when the next summary replaces the current one.

        The new summary may take ``max_summary_tokens``, a tenth more quoted, plus its
        heading (and the block's header and the system prompt's note, when no block is sent
        yet); the current one goes. Under a
        ``max_history_tokens`` cap with room to spare, history loses none of it
        (``history_budget`` says).
        """
        summary = self._memory.summary
        current = self._counter.count_text(quote(summary.text)) if summary else 0
        most = self.settings.max_summary_tokens
        frame = SUMMARY_FRAME_TOKENS + (0 if self._block and self._block[1] else self._note())
        return max(0, most + most // QUOTE_SHARE + frame - current)

    def _note(self) -> int:
        """What the runtime's note adds to the system prompt when a block is sent."""
        return self._counter.count_text("\n\n" + RUNTIME_NOTE)

    # --- writing one --------------------------------------------------------------------------

    async def _summarise(self, history: list[Message], plan: SummaryPlan) -> bool:
        part = history[: plan.count]
        # photos and files as their lines (names, sizes, paths), never their bytes
        folder = f"{FILES_FOLDER}/{self._session.session_id}"
        previous = self._memory.summary.text if self._memory.summary else None
        max_tokens = self.settings.max_summary_tokens
        usage: Usage | None = None
        extractive = False
        text = ""
        # The offline model would answer fixed text, not a summary of the history it replaced.
        if not _is_offline(self._summariser):
            try:
                text, usage = await write_summary(
                    self._summariser,
                    previous=previous,
                    messages=[  # as requests carried them; a photo or file as its lines
                        described(m, folder, chat_file) if m.attachments else c
                        for m, c in zip(part, plan.messages or part, strict=True)
                    ],
                    counter=self._counter,
                    max_tokens=max_tokens,
                    input_room=self._input_room(),
                )
            except LLMError as exc:
                log.warning(
                    "session %s: summariser failed (%s); extractive summary",
                    self._session.session_id,
                    exc,
                )
        if not text.strip():
            said = [described(m, folder, chat_file) for m in part]
            text = extractive_summary(previous, said, self._counter, max_tokens)
            extractive = True
            usage = None
        if usage is not None:
            usage = self._price(usage)
            if self._spent is not None:
                self._spent(usage)
        tokens_after = plan.tokens_before - plan.tokens_summarised + self._counter.count_text(text)
        recorded = await self._session.record_summary(
            text,
            last=part[-1],
            tokens_before=plan.tokens_before,
            tokens_after=tokens_after,
            model="extractive" if extractive else self._model,
            usage=usage,
            extractive=extractive,
        )
        if recorded is None:
            return False  # the window moved on meanwhile: nothing changed, nothing lost
        del history[: plan.count]
        if self._sink is not None:
            await self._sink.summary(recorded.round, recorded.through_seq, recorded.messages)
        self._memory = await self._session.memory()
        self._block = None
        self.written += 1
        if self._meter is not None:
            self._meter.action("summaries")
        return True

    def _input_room(self) -> int:
        """What a summariser request may cost: the agent's limit, or the summariser model's."""
        if self.settings.model is None:
            return (
                self._budget.limit + self._budget.output_reserve - self.settings.max_summary_tokens
            )
        window = context_window(self.settings.model, None)
        return max(512, int(window * 0.9) - self.settings.max_summary_tokens)


def _is_offline(provider: LLMProvider) -> bool:
    """Whether ``provider`` is the offline model, also inside the retry wrapper.

    ``build_provider`` wraps every provider, the offline one included, in a
    ``ResilientProvider``: testing the outer object alone let a served agent's fixed offline
    reply be written as its summary (the history it replaced was lost from the window).
    """
    inner: object = provider
    while isinstance(inner, ResilientProvider):
        inner = inner.inner
    return isinstance(inner, OfflineProvider)
