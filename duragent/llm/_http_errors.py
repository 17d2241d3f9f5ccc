"""Shared helpers for mapping HTTP failures to duragent's LLMError tree."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

__all__ = ["CONTEXT_LENGTH_MARKERS", "looks_like_context_overflow", "parse_retry_after"]

CONTEXT_LENGTH_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "reduce the length",
    "exceeds the model",
    "input is too long",
    "request too large",
)


def looks_like_context_overflow(*texts: str | None) -> bool:
    """True when an error body/code says the request is longer than the model accepts."""
    joined = " ".join(t.lower() for t in texts if t)
    return any(marker in joined for marker in CONTEXT_LENGTH_MARKERS)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
