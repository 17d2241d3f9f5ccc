"""Sortable unique ids (ULIDs) with the reference's prefixes: ``session_…``, ``msg_…``.

A ULID is 48 bits of milliseconds plus 80 random bits in Crockford base32, so ids sort by
creation time in ``ls`` and in directory listings (the process's calendar, ``core.clock``:
a saved output's retention is read from its id's time). Ids made in the same millisecond by this
process increase monotonically, so sorting never reorders them.
"""

from __future__ import annotations

import os
import threading

from duragent.core.clock import now_seconds

__all__ = ["new_message_id", "new_session_id", "new_ulid"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_ms = -1
_last_random = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    """Return a new 26-character ULID, monotonic within one process."""
    global _last_ms, _last_random
    ms = int(now_seconds() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = (_last_random + 1) % (1 << _RANDOM_BITS)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_random = ms, rand
    return _encode(ms, 10) + _encode(rand, 16)


def new_session_id() -> str:
    """A session id as the reference writes it: ``session_<ULID>``."""
    return f"session_{new_ulid()}"


def new_message_id() -> str:
    """A message id as the reference writes it: ``msg_<ULID>``."""
    return f"msg_{new_ulid()}"
