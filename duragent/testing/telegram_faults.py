"""Scriptable faults of the fake Telegram Bot API: flood control, parse errors, 5xx, delays, drops.

A gateway is only as good as its handling of what Telegram does on a bad day: 429 with a
``retry_after`` it must honour per chat, a "can't parse entities" it must answer with plain
text, a 5xx or a connection closed without an answer (did the message go out or not?), an
answer that takes seconds. Each is a ``FaultRule`` matched against the calls that reach the
fake; a test sets rules in-process (``FakeTelegram.add_fault``) or, from another process, as
JSON over ``POST /_fake/faults`` — the JSON form is ``FaultRule.to_json``.

A rule fires on every ``every``-th call it matches (1: each one) and, when ``times`` is set,
only that many times. ``delay`` rules slow the answer and let it through; every other kind
replaces the answer (``drop_after`` lets the call take effect, then closes the connection
without answering: the client cannot tell a sent message from a lost one).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, cast, get_args

__all__ = ["FaultBook", "FaultChoice", "FaultKind", "FaultRule"]

FaultKind = Literal["retry_after", "bad_entities", "server_error", "delay", "drop", "drop_after"]
_KINDS: tuple[str, ...] = get_args(FaultKind)
_SERVER_ERRORS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass
class FaultRule:
    """One scripted fault (see the module docstring); build it with the class methods."""

    kind: FaultKind
    method: str | None = "sendMessage"
    """The Bot API method it applies to; ``None``: every method."""
    chat_id: int | str | None = None
    """Only calls for this chat; ``None``: any chat (and calls without one)."""
    every: int = 1
    times: int | None = None
    retry_after: int = 1
    status: int = 500
    delay: float = 0.0
    description: str | None = None
    matched: int = field(default=0, compare=False)
    fired: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(_KINDS)}, not {self.kind!r}")
        if self.every < 1:
            raise ValueError(f"fault 'every' must be at least 1, not {self.every}")
        if self.times is not None and self.times < 0:
            raise ValueError(f"fault 'times' must be at least 0, not {self.times}")

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def too_many_requests(cls, retry_after: int = 1, **match: Any) -> FaultRule:
        """429 "Too Many Requests: retry after N" with ``parameters.retry_after``."""
        return cls(kind="retry_after", retry_after=retry_after, **match)

    @classmethod
    def cant_parse_entities(cls, detail: str | None = None, **match: Any) -> FaultRule:
        """400 "Bad Request: can't parse entities: ...", whatever the text."""
        return cls(kind="bad_entities", description=detail, **match)

    @classmethod
    def server_failure(cls, status: int = 500, **match: Any) -> FaultRule:
        """A 5xx answer with Telegram's error body."""
        return cls(kind="server_error", status=status, **match)

    @classmethod
    def slow(cls, delay: float, **match: Any) -> FaultRule:
        """Answer normally, ``delay`` seconds late."""
        return cls(kind="delay", delay=delay, **match)

    @classmethod
    def dropped(cls, *, after_applying: bool = False, **match: Any) -> FaultRule:
        """Close the connection without answering, before (or after) the call takes effect."""
        return cls(kind="drop_after" if after_applying else "drop", **match)

    # -- matching -----------------------------------------------------------------------------

    @property
    def exhausted(self) -> bool:
        """It has fired ``times`` times and will not fire again."""
        return self.times is not None and self.fired >= self.times

    def matches(self, method: str, chat_id: int | str | None) -> bool:
        """The call is one this rule is about (counting is ``FaultBook``'s job)."""
        if self.method is not None and self.method != method:
            return False
        return self.chat_id is None or str(self.chat_id) == str(chat_id)

    def answer(self) -> tuple[int, dict[str, Any]]:
        """The HTTP status and Bot API error body this fault answers with."""
        if self.kind == "retry_after":
            return 429, {
                "ok": False,
                "error_code": 429,
                "description": f"Too Many Requests: retry after {self.retry_after}",
                "parameters": {"retry_after": self.retry_after},
            }
        if self.kind == "bad_entities":
            detail = self.description or 'Unsupported start tag "x" at byte offset 0'
            return 400, {
                "ok": False,
                "error_code": 400,
                "description": f"Bad Request: can't parse entities: {detail}",
            }
        description = self.description or _SERVER_ERRORS.get(self.status, "Internal Server Error")
        return self.status, {"ok": False, "error_code": self.status, "description": description}

    # -- JSON ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (what ``POST /_fake/faults`` accepts and ``GET /_fake/faults`` lists)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> FaultRule:
        """A rule from ``to_json``'s form; ``ValueError`` naming the bad field otherwise."""
        if not isinstance(data, dict):
            raise ValueError(f"a fault rule is a JSON object, not {type(data).__name__}")
        known = {f.name for f in fields(cls)} - {"matched", "fired"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fault rule field(s) {unknown}; known: {sorted(known)}")
        if "kind" not in data:
            raise ValueError(f"a fault rule needs 'kind', one of {', '.join(_KINDS)}")
        try:
            return cls(**cast(dict[str, Any], data))
        except TypeError as exc:
            raise ValueError(f"bad fault rule {data!r}: {exc}") from exc


@dataclass(frozen=True)
class FaultChoice:
    """What the fake does with one call: wait ``delay`` s, then answer or apply ``fault``."""

    delay: float = 0.0
    fault: FaultRule | None = None


NO_FAULT = FaultChoice()


class FaultBook:
    """The active rules, consulted once per call (thread-safe: tests add rules from any thread)."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def add(self, *rules: FaultRule) -> None:
        """Activate rules; they are consulted in the order added."""
        with self._lock:
            self._rules.extend(rules)

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._rules.clear()

    @property
    def rules(self) -> list[FaultRule]:
        """The rules, with their ``matched``/``fired`` counters."""
        with self._lock:
            return list(self._rules)

    def choose(self, method: str, chat_id: int | str | None) -> FaultChoice:
        """Count the call against every matching rule; the delays add up, the first fault wins."""
        if not self._rules:  # the common case, without taking the lock
            return NO_FAULT
        delay, fault = 0.0, None
        with self._lock:
            for rule in self._rules:
                if rule.exhausted or not rule.matches(method, chat_id):
                    continue
                rule.matched += 1
                if rule.matched % rule.every:
                    continue
                if rule.kind != "delay" and fault is not None:
                    continue  # another fault already answers this call
                rule.fired += 1
                delay += rule.delay
                if rule.kind != "delay":
                    fault = rule
        return FaultChoice(delay, fault) if delay or fault else NO_FAULT
