"""Keeping secrets out of logs: a filter that replaces each known secret before a record is written.

A chat platform's token is part of every request URL (Telegram's ``/bot<token>/sendMessage``),
and HTTP libraries log request URLs (httpx logs each one at INFO), SDK errors quote them (a
rejected token is repeated in the exception text), and tracebacks carry both. Hiding each
logger one by one misses the next one; so, like ``collapse_repeats``, the filter sits on the
root *handlers*, where every record passes, and rewrites the rendered message and the
traceback text with the secret replaced by ``<redacted>``.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["REDACTED", "SecretRedactor", "redact_secrets"]

REDACTED = "<redacted>"

_lock = threading.Lock()
_installed: SecretRedactor | None = None


class SecretRedactor(logging.Filter):
    """Replaces every registered secret in a record's message and traceback text."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: tuple[str, ...] = ()

    def add(self, secret: str) -> None:
        """Hide ``secret`` from now on (secrets shorter than 8 characters are refused)."""
        if len(secret) < 8:
            raise ValueError("a secret shorter than 8 characters cannot be redacted safely")
        if secret not in self._secrets:
            self._secrets = (*self._secrets, secret)

    def scrub(self, text: str) -> str:
        """``text`` with every secret replaced."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record`` in place when it mentions a secret; never drops it."""
        if not self._secrets:
            return True
        message = record.getMessage()
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


def redact_secrets(*secrets: str) -> SecretRedactor:
    """Hide ``secrets`` in every record the root logger's handlers write (one filter, shared).

    Handlers added to the root logger later are covered too when they are added through
    ``logging.basicConfig`` before this call; a handler added afterwards gets the filter the
    next time this is called.
    """
    global _installed
    with _lock:
        if _installed is None:
            _installed = SecretRedactor()
        for secret in secrets:
            _installed.add(secret)
        for handler in logging.getLogger().handlers:
            if _installed not in handler.filters:
                handler.addFilter(_installed)
        return _installed
