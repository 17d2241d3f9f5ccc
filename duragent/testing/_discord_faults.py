"""The fake Discord's bad days: 5xx answers, dropped connections, and the nonce that saves a retry.

Discord answers a REST call with a 5xx now and then, and a connection can close before its
answer arrives, after the call took effect or before. A client cannot tell a message that was
posted from one that was not, so it posts again; Discord's answer to that is the message
``nonce`` with ``enforce_nonce``: a second post of one nonce by the same author within a few
minutes returns the first message and creates none. discord.py sends a nonce with every
message (a random one unless it is given one), so only a sender that keeps one nonce for
every try of one message is saved by it. The fake does what Discord does, so a test sees the
duplicate a sender with a fresh nonce per try would leave.

``DiscordFaults`` holds the scripted faults per ``"METHOD /path"``, each used once, in the
order scripted; a path ending in ``/*`` stands for any last segment, so
``PATCH /channels/7/messages/*`` is the next edit in channel 7, whatever its message.
``Nonces`` remembers the nonces of the bot's posts per channel for ``NONCE_SECONDS``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["NONCE_SECONDS", "DiscordFault", "DiscordFaults", "Nonces", "server_error_body"]

NONCE_SECONDS = 300.0
"""How long Discord keeps a nonce ("the past few minutes" in its documentation)."""
_KEPT_NONCES = 10_000

FaultKind = Literal["server_error", "drop", "drop_after", "slow"]


@dataclass(frozen=True, slots=True)
class DiscordFault:
    """One scripted fault: a 5xx, a dropped connection, or a late answer.

    A 5xx is not applied; a connection is closed before or after applying; a ``slow`` call
    is answered ``seconds`` late, and applied then (as a slow Discord does).
    """

    kind: FaultKind
    status: int = 502
    seconds: float = 0.0


class DiscordFaults:
    """The faults waiting per ``"METHOD /path"`` (module docstring)."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[DiscordFault]] = {}

    def add(self, method: str, path: str, fault: DiscordFault, times: int = 1) -> None:
        """The next ``times`` calls to ``method path`` meet ``fault``."""
        if fault.kind == "server_error" and not 500 <= fault.status <= 599:
            raise ValueError(f"a server error's status is 5xx, not {fault.status}")
        self._waiting.setdefault(f"{method} {path}", []).extend([fault] * times)

    def take(self, key: str) -> DiscordFault | None:
        """The fault this call meets, if one waits for it (its exact path first)."""
        if not self._waiting.get(key):
            key = key.rsplit("/", 1)[0] + "/*"
        waiting = self._waiting.get(key)
        if not waiting:
            return None
        fault = waiting.pop(0)
        if not waiting:
            del self._waiting[key]
        return fault


def server_error_body(status: int) -> dict[str, Any]:
    """What Discord's edge answers a 5xx with."""
    return {"message": f"{status}: Server Error", "code": 0}


class Nonces:
    """The bot's recent posts by ``(channel, nonce)``: a repeated post returns the first."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._seen: OrderedDict[tuple[int, str], tuple[float, int]] = OrderedDict()

    def earlier(self, channel_id: int, body: dict[str, Any]) -> int | None:
        """The id of the message this post repeats (same nonce, enforced, recent), or None."""
        nonce = body.get("nonce")
        if nonce is None or not body.get("enforce_nonce"):
            return None
        found = self._seen.get((channel_id, str(nonce)))
        if found is None or self._clock() - found[0] > NONCE_SECONDS:
            return None
        return found[1]

    def remember(self, channel_id: int, body: dict[str, Any], message_id: int) -> None:
        """Keep a post's nonce (the oldest are forgotten past ``_KEPT_NONCES``)."""
        nonce = body.get("nonce")
        if nonce is None:
            return
        self._seen[(channel_id, str(nonce))] = (self._clock(), message_id)
        while len(self._seen) > _KEPT_NONCES:
            self._seen.popitem(last=False)
