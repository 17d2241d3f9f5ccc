"""The fake Telegram's record of every Bot API call, and the questions tests ask of it.

Tests of a chat gateway assert on what the *user* would have seen (the texts delivered to a
chat), on what the bot *tried* (every call, including the ones answered 429), and on timing
rules Telegram enforces by banning bots: no call into a chat before the ``retry_after`` it was
told, and a bounded rate per chat. So each call is kept with its parameters, the answer given,
and the time it arrived on ``time.monotonic()`` — Linux's CLOCK_MONOTONIC, the same clock in
every process on the machine, so a test in another process can compare its own readings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from duragent.testing._fake_nodes import DEFAULT_NODE

__all__ = [
    "SEND_METHODS",
    "CallLog",
    "EarlyRetry",
    "RecordedCall",
    "busiest_window",
    "early_retries",
    "sent_texts",
]

SEND_METHODS = frozenset(
    {
        "sendMessage",
        "editMessageText",
        "editMessageReplyMarkup",
        "sendChatAction",
        "sendPhoto",
        "sendDocument",
        "sendVoice",
        "sendAudio",
        "sendVideo",
        "sendMessageDraft",
        "deleteMessage",
    }
)
"""Calls that act on a chat, and that flood control (429) applies to."""


@dataclass(frozen=True)
class RecordedCall:
    """One Bot API call as the fake received and answered it."""

    index: int
    method: str
    params: dict[str, Any]
    time: float
    """``time.monotonic()`` when it arrived."""
    answered_at: float
    """``time.monotonic()`` when the answer was sent (after any scripted delay)."""
    status: int
    """HTTP status answered; 0 when the connection was dropped without an answer."""
    answer: dict[str, Any] | None
    """The JSON body answered (``None`` when dropped)."""
    chat_id: int | str | None = None
    fault: str | None = None
    """The kind of scripted fault that shaped the answer, if any."""
    node: str = DEFAULT_NODE
    """The serve process that made it: the ``{node}`` of its ``/n/{node}`` prefix, ``a``
    without one (``_fake_nodes``), so a cluster test knows who polled and who sent."""

    @property
    def ok(self) -> bool:
        """Telegram answered ``"ok": true``."""
        return self.answer is not None and self.answer.get("ok") is True

    @property
    def retry_after(self) -> int | None:
        """The ``retry_after`` of a 429 answer."""
        if self.answer is None:
            return None
        value = self.answer.get("parameters", {}).get("retry_after")
        return value if isinstance(value, int) else None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``GET /_fake/calls``)."""
        return {
            "index": self.index,
            "method": self.method,
            "params": self.params,
            "time": self.time,
            "answered_at": self.answered_at,
            "status": self.status,
            "answer": self.answer,
            "chat_id": self.chat_id,
            "fault": self.fault,
            "node": self.node,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordedCall:
        """A call read back from ``to_json`` (``GET /_fake/calls`` in another process).

        JSON from a fake that predates nodes has no ``node``: its calls were node ``a``'s.
        """
        return cls(
            int(data["index"]),
            str(data["method"]),
            dict(data["params"]),
            float(data["time"]),
            float(data["answered_at"]),
            int(data["status"]),
            data.get("answer"),
            data.get("chat_id"),
            data.get("fault"),
            str(data.get("node", DEFAULT_NODE)),
        )


@dataclass(frozen=True)
class EarlyRetry:
    """A call into a chat that came before the ``retry_after`` of an earlier 429 had passed."""

    limited: RecordedCall
    early: RecordedCall

    @property
    def too_early_by(self) -> float:
        """Seconds the second call came too soon."""
        assert self.limited.retry_after is not None
        return self.limited.answered_at + self.limited.retry_after - self.early.time


class CallLog:
    """Calls in arrival order (the latest ``keep`` of them), and per-chat send times (all)."""

    def __init__(self, keep: int | None = None) -> None:
        self._calls: deque[RecordedCall] = deque(maxlen=keep)
        self._count = 0
        self._send_times: dict[int | str, list[float]] = {}

    def add(
        self,
        method: str,
        params: dict[str, Any],
        arrived: float,
        answered_at: float,
        status: int,
        answer: dict[str, Any] | None,
        *,
        chat_id: int | str | None,
        fault: str | None,
        node: str = DEFAULT_NODE,
    ) -> RecordedCall:
        """Record one answered (or dropped) call (made by ``node``)."""
        call = RecordedCall(
            self._count, method, params, arrived, answered_at, status, answer, chat_id, fault, node
        )
        self._count += 1
        self._calls.append(call)
        if method == "sendMessage" and chat_id is not None and call.ok:
            self._send_times.setdefault(chat_id, []).append(arrived)
        return call

    @property
    def count(self) -> int:
        """Calls received since the start (also those no longer kept)."""
        return self._count

    def calls(self, method: str | None = None, *, since: int = 0) -> list[RecordedCall]:
        """Kept calls, optionally of one method and from index ``since`` on.

        Indexes are consecutive and the kept calls are the latest, so the ones from ``since``
        on are the last ``count - since``: read from the end, a poll for what is new costs
        what is new, not the whole record (a campaign polls every few ms; scanning every
        call each time made the benchmark's CPU grow with the square of its length).
        """
        kept = self._calls
        new = self._count - max(since, self._count - len(kept))
        if new <= 0:
            return []
        if new >= len(kept):
            return [c for c in kept if method is None or c.method == method]
        latest = [c for c in islice(reversed(kept), new) if method is None or c.method == method]
        latest.reverse()
        return latest

    def send_times(self, chat_id: int | str) -> list[float]:
        """When each message that reached the chat was sent (successful ``sendMessage`` only)."""
        return list(self._send_times.get(chat_id, ()))


def busiest_window(times: list[float], seconds: float) -> int:
    """The most sends that fell within any ``seconds``-long window (times in order)."""
    most, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] >= seconds:
            start += 1
        most = max(most, end - start + 1)
    return most


def sent_texts(calls: Iterable[RecordedCall], chat_id: int | str | None) -> list[str]:
    """Texts of the messages that reached a chat (any chat when ``None``), in order."""
    return [
        c.answer["result"]["text"]
        for c in calls
        if c.method == "sendMessage"
        and c.ok
        and c.answer is not None
        and (chat_id is None or str(c.chat_id) == str(chat_id))
    ]


def early_retries(calls: Iterable[RecordedCall]) -> list[EarlyRetry]:
    """Every chat call made before the ``retry_after`` of a 429 earlier in the same chat ran out.

    Telegram's flood control applies to the chat (and, for a global 429, to the bot), so the
    check pairs each 429 with the later calls of any chat-acting method into that chat.
    """
    limited_until: dict[str, RecordedCall] = {}
    found: list[EarlyRetry] = []
    for call in calls:
        if call.method not in SEND_METHODS or call.chat_id is None:
            continue
        key = str(call.chat_id)
        limit = limited_until.get(key)
        if (
            limit is not None
            and limit.retry_after is not None
            and call.time < limit.answered_at + limit.retry_after
        ):
            found.append(EarlyRetry(limit, call))
        if call.status == 429 and call.retry_after is not None:
            limited_until[key] = call
    return found
