"""Discord's 429s and retries, counted from the lines discord.py writes about them.

discord.py waits out Discord's rate limits itself (as it should: do not fight it) and offers
no hook for them; what it does is log each one, always at warning level, on ``discord.http``:
"We are being rate limited. … responded with 429. Retrying in N seconds." (or "… erroring
instead." when the wait would be too long) and "Global rate limit has been hit. Retrying in
N seconds.". A filter on that logger counts them for ``/metrics`` and lets every line
through unchanged. The texts are discord.py 2.x's (``pyproject`` bounds the version); a test
drives a real 429 through the fake Discord so a changed text fails there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["RateLimitCounter"]

LOGGER = "discord.http"
_LIMITED = ("We are being rate limited.", "Global rate limit has been hit.")


class RateLimitCounter(logging.Filter):
    """Counts discord.py's rate-limit lines (see module docstring); ``attach`` / ``detach``."""

    def __init__(self, rate_limited: Callable[[], None], retried: Callable[[], None]) -> None:
        super().__init__()
        self._rate_limited = rate_limited
        self._retried = retried

    def filter(self, record: logging.LogRecord) -> bool:
        """Count a rate-limit line; never drops anything."""
        text = record.msg if isinstance(record.msg, str) else ""
        if text.startswith(_LIMITED):
            self._rate_limited()
            if "Retrying" in text:
                self._retried()
        return True

    def attach(self) -> None:
        """Start counting."""
        logging.getLogger(LOGGER).addFilter(self)

    def detach(self) -> None:
        """Stop counting."""
        logging.getLogger(LOGGER).removeFilter(self)
