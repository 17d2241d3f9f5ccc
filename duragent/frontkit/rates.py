"""How many messages one sender may send an agent in a minute (issue 33).

A flood from one person costs a durable write per message and a model turn per batch, and
every person a chat lets in can send one. ``ChatFront`` asks ``SenderRates.admit`` right
after the access gate, before anything is recorded or run: over the agent's
``spec.access.quotas.messages_per_sender_per_minute`` the message is dropped (not recorded,
not answered), and the sender is told once (not once per message: a flood must not make
the bot flood back) which limit applied and in how many seconds they can write again.
Owners are never limited; ``0`` turns the limit off.

A sliding window per (agent, gateway, sender): the times of the messages let in during the
last minute (at most the limit's number of them). A refused message does not count, so the
sender can write again as soon as the oldest of those is a minute old. Memory stays bounded:
senders are kept in the order they last wrote, and those idle for a minute are forgotten as
new messages arrive (at most ``max_senders`` are kept at all). The window lives in this
process: with several nodes each counts the messages it receives. Time is the runtime's
calendar (``core.clock``), so a test moves it by hand; each message is counted at the time
the platform says it was sent when it says one (``InboundMessage.sent_at``, never later than
now), not when it arrived (a slow bot reading a flood does not open new windows in it, and
the notice is given once per window of sending time); a sender is forgotten once nothing of
theirs arrived for a minute.
"""

from __future__ import annotations

import bisect
import math
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from duragent.agents.access_spec import AccessSpec
from duragent.agents.roles import access_of, is_owner
from duragent.core.clock import now_seconds

__all__ = ["RATE_FIELD", "RateVerdict", "SenderRates"]

RATE_FIELD = "spec.access.quotas.messages_per_sender_per_minute"
WINDOW_SECONDS = 60.0
MAX_SENDERS = 100_000
"""Senders tracked at once; beyond it the longest idle is forgotten (a bound, not a limit)."""


@dataclass(frozen=True, slots=True)
class RateVerdict:
    """Whether a message is let in; ``notice``: what to tell its sender (once per window)."""

    admitted: bool
    notice: str | None = None
    retry_after: int = 0


@dataclass(slots=True)
class _Sender:
    times: deque[float] = field(default_factory=deque)
    told_until: float = 0.0
    """Until when the sender has been told (no second notice before)."""
    last: float = 0.0
    """When their latest message arrived (a sender still arriving is never forgotten, however
    old the sending times: a slow bot still reading a flood)."""


class SenderRates:
    """Per-sender message windows for one chat front (see module docstring)."""

    def __init__(
        self, *, clock: Callable[[], float] = now_seconds, max_senders: int = MAX_SENDERS
    ) -> None:
        self._clock = clock
        self._max = max(1, max_senders)
        self._senders: OrderedDict[tuple[str, str, str], _Sender] = OrderedDict()

    def __len__(self) -> int:
        """Senders currently remembered."""
        return len(self._senders)

    def admit(
        self,
        access: AccessSpec | None,
        *,
        agent: str,
        gateway: str,
        sender_id: str,
        addressed: bool = True,
        sent_at: float | None = None,
    ) -> RateVerdict:
        """Let the message in, or refuse it (``messages_per_sender_per_minute``).

        ``addressed``: the message asks the bot for something (a direct message, a mention,
        a reply, a command); only then is a refused sender told, so unaddressed group
        chatter over the limit is dropped without the bot speaking up in the group.
        ``sent_at``: when the platform says the person sent it (never later than now). The
        window counts that, not the arrival: a backlog delivered at once after an outage was
        written at the person's pace and is let in; a flood is refused however slowly it is
        read.
        """
        limit = access_of(access).quotas.messages_per_sender_per_minute
        if limit == 0 or is_owner(access, gateway, sender_id):
            return RateVerdict(admitted=True)
        now = self._clock()
        at = now if sent_at is None else min(now, sent_at)
        self._forget_idle(now)
        key = (agent, gateway, sender_id)
        sender = self._senders.get(key)
        if sender is None:
            sender = self._senders[key] = _Sender()
        self._senders.move_to_end(key)
        sender.last = now
        times = sender.times
        while times and times[0] <= at - WINDOW_SECONDS:
            times.popleft()
        while len(times) > limit:  # the limit was lowered since (agent.yaml reloaded)
            times.popleft()
        if len(times) < limit:
            bisect.insort(times, at)  # in sending order, whatever the arrival order
            return RateVerdict(admitted=True)
        free_at = times[0] + WINDOW_SECONDS
        wait = max(1, math.ceil(free_at - at))
        if not addressed or at < sender.told_until:
            return RateVerdict(admitted=False, retry_after=wait)
        sender.told_until = free_at
        return RateVerdict(admitted=False, notice=rate_notice(limit, wait), retry_after=wait)

    def _forget_idle(self, now: float) -> None:
        """Drop senders idle for a window (oldest first), and any beyond ``max_senders``."""
        senders = self._senders
        while senders:
            key, oldest = next(iter(senders.items()))
            idle = oldest.last <= now - WINDOW_SECONDS and oldest.told_until <= now
            if not idle and len(senders) < self._max:
                return
            del senders[key]


def rate_notice(limit: int, wait: int) -> str:
    """What a sender over the limit is told (once per window)."""
    return (
        f"You sent {limit} messages within a minute, the most this bot takes from one person "
        f"({RATE_FIELD}; the bot's owner can raise it). Messages sent until then are not "
        f"read: you can write again in {wait} s."
    )
