"""One JSON object per log line, for log shippers (``serve --log-format json``).

Each line: ``timestamp`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``, ``message``,
then whatever ``logctx`` has bound where the record was made (``session_id``, ``agent``,
``front_end``, ``turn_id``), then ``exception`` / ``stack`` when the record has them.

This is only a formatter: the handler's filters (``redact`` replacing secrets,
``logrepeat`` bounding floods) run before it, exactly as for the human format, so a
secret never reaches a JSON line either. The context is read when the record is formatted,
which for the stream handler the CLI installs is in the thread (and task) that logged it.
A newline inside a message is escaped by JSON, so one record is always one line: a
multi-line traceback can no longer be split by a shipper into bogus records.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from duragent.observability.logctx import current

__all__ = ["JsonFormatter"]


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        when = datetime.fromtimestamp(record.created, UTC)
        out: dict[str, Any] = {
            "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update(current())
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)
