"""``serve --log-format text|json`` (or ``DURAGENT_LOG_FORMAT``): how log lines are written.

``text`` (the default, everywhere) is for people: ``12:00:01 INFO    logger: message``.
``json`` is for log shippers: one object per line (``observability.jsonlog``) carrying the session,
agent, front end and turn a line is about. Only the handlers the CLI's logging setup made
are switched (a host that configured logging itself keeps its handlers), and their filters
(secret redaction, flood bounding) stay in place: the format is the last step.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable

from duragent.observability.jsonlog import JsonFormatter

__all__ = ["LogFormat", "remember_handlers", "use_log_format"]

_own: list[logging.Handler] = []
_text: dict[int, logging.Formatter | None] = {}


class LogFormat(enum.StrEnum):
    """The choices of ``--log-format``."""

    TEXT = "text"
    JSON = "json"


def remember_handlers(handlers: Iterable[logging.Handler]) -> None:
    """The handlers the CLI's logging setup made (the ones ``use_log_format`` switches)."""
    for handler in handlers:
        if handler not in _own:
            _own.append(handler)
            _text[id(handler)] = handler.formatter


def use_log_format(chosen: LogFormat) -> None:
    """Write every line of the CLI's handlers in ``chosen`` from now on."""
    for handler in _own:
        if chosen is LogFormat.JSON:
            handler.setFormatter(JsonFormatter())
        else:
            handler.setFormatter(_text.get(id(handler)))
    # A Python warning is printed to stderr as two bare lines, which would break the "one
    # object per line" promise: in JSON mode it goes through logging (``py.warnings``).
    logging.captureWarnings(chosen is LogFormat.JSON)
