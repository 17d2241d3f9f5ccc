"""JSON log lines: one object per record, the turn's fields on it, the usual filters first."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from duragent.observability.jsonlog import JsonFormatter
from duragent.observability.logctx import current, log_context, turn_scope
from duragent.observability.logrepeat import RepeatFilter
from duragent.observability.redact import REDACTED, SecretRedactor

SECRET = "sk-live-0123456789abcdef"


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    redactor = SecretRedactor()
    redactor.add(SECRET)
    handler.addFilter(redactor)
    handler.addFilter(RepeatFilter(60, clock=lambda: 0.0))
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("test.jsonlog")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    try:
        yield logger, stream, handler
    finally:
        logger.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_record_is_one_line_carrying_what_its_scope_bound(logged: Any) -> None:
    logger, stream, _ = logged
    with log_context(session_id="session_1", agent="bot", front_end="http", turn_id="turn_1"):
        logger.warning("two\nlines %s", "here")
    logger.info("outside")
    inside, outside = lines(stream)
    assert inside["message"] == "two\nlines here"
    assert inside["level"] == "WARNING"
    assert inside["logger"] == "test.jsonlog"
    assert inside["timestamp"].endswith("Z")
    assert (inside["session_id"], inside["agent"], inside["front_end"], inside["turn_id"]) == (
        "session_1",
        "bot",
        "http",
        "turn_1",
    )
    assert "turn_id" not in outside


def test_secrets_are_replaced_in_json_messages_and_tracebacks(logged: Any) -> None:
    logger, stream, _ = logged
    logger.info("token is %s", SECRET)
    try:
        raise ValueError(f"bad key {SECRET}")
    except ValueError:
        logger.exception("failed")
    text = stream.getvalue()
    assert SECRET not in text
    message, failure = lines(stream)
    assert message["message"] == f"token is {REDACTED}"
    assert REDACTED in failure["exception"]
    assert "ValueError" in failure["exception"]


def test_a_flood_is_still_bounded_in_json(logged: Any) -> None:
    logger, stream, _ = logged
    with log_context(turn_id="turn_a"):
        for _ in range(500):
            logger.error("disk failing")
    assert len(lines(stream)) == 1


def test_the_same_words_in_another_turn_are_not_a_repeat(logged: Any) -> None:
    logger, stream, _ = logged
    for turn in ("turn_a", "turn_b", "turn_a"):
        with log_context(turn_id=turn):
            logger.info("HTTP Request: POST /v1/chat/completions")
    assert [r["turn_id"] for r in lines(stream)] == ["turn_a", "turn_b"]


def test_a_turn_scope_keeps_a_front_ends_turn_id_or_mints_one() -> None:
    with log_context(turn_id="turn_given", front_end="http"), turn_scope("session_x") as turn:
        assert turn == "turn_given"
        assert current()["session_id"] == "session_x"
        assert current()["front_end"] == "http"
    with turn_scope("session_y") as minted:
        assert minted.startswith("turn_")
        assert minted != "turn_given"
    assert dict(current()) == {}


def test_an_unknown_field_is_never_bound_as_none() -> None:
    with log_context(agent="bot"), log_context(agent=None, session_id="s"):
        assert dict(current()) == {"agent": "bot", "session_id": "s"}
