"""``WriteHealth`` for PostgreSQL: the last write's outcome, and a quick ``SELECT 1`` probe.

Unlike a disk, a database can go away while nothing is written, so ``check`` probes even
without a recorded failure (at most every ``min_interval``, waiting at most a second for a
connection): ``/readyz`` reports the database either way, and ready again once it answers.
"""

from __future__ import annotations

import time

from duragent.errors import StorageError
from duragent.store.postgres.connection import Database

__all__ = ["PostgresHealth"]


class PostgresHealth:
    """``WriteHealth``: the last write's outcome; ``check`` asks the database again."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._failure: OSError | None = None
        self._probed = 0.0

    @property
    def failure(self) -> OSError | None:
        """The error of the last write, or of any query that could not reach the database."""
        return self._failure or self._db.failure

    def succeeded(self) -> None:
        """A write went through."""
        self._failure = None

    def failed(self, exc: OSError) -> None:
        """A write failed with ``exc``."""
        self._failure = exc

    def check(self, *, min_interval: float = 1.0) -> OSError | None:
        """The current failure, after a ``SELECT 1`` (at most every ``min_interval``).

        Unlike a disk, a database can go away while nothing is written, so this probes even
        without a recorded failure (``/readyz`` then reports the database either way).
        """
        if time.monotonic() - self._probed < min_interval:
            return self.failure
        self._probed = time.monotonic()
        try:
            self._db.ping(timeout=min(1.0, self._db.connect_timeout))
        except StorageError as exc:
            self._failure = exc
        else:
            self._failure = None
        return self._failure
