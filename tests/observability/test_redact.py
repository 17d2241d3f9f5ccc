"""Secrets never reach a log: messages, arguments and tracebacks are scrubbed at the handler."""

from __future__ import annotations

import io
import logging

import pytest

from duragent.observability.redact import REDACTED, SecretRedactor, redact_secrets

TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"


@pytest.fixture
def captured() -> logging.Handler:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(_redactor())
    return handler


def _redactor() -> SecretRedactor:
    redactor = SecretRedactor()
    redactor.add(TOKEN)
    return redactor


def _written(handler: logging.Handler, emit: object) -> str:
    logger = logging.getLogger("test.redact")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    try:
        assert callable(emit)
        emit(logger)
    finally:
        logger.removeHandler(handler)
    stream = handler.stream  # type: ignore[attr-defined]
    assert isinstance(stream, io.StringIO)
    return stream.getvalue()


def test_a_secret_in_a_request_url_argument_is_replaced(captured: logging.Handler) -> None:
    out = _written(
        captured,
        lambda log: log.info("HTTP Request: POST %s", f"https://api.telegram.org/bot{TOKEN}/getMe"),
    )
    assert TOKEN not in out
    assert f"bot{REDACTED}/getMe" in out


def test_a_secret_in_a_traceback_is_replaced(captured: logging.Handler) -> None:
    def emit(log: logging.Logger) -> None:
        try:
            raise ValueError(f"The token `{TOKEN}` was rejected by the server.")
        except ValueError:
            log.exception("start failed")

    handler = captured
    handler.setFormatter(logging.Formatter("%(message)s"))
    out = _written(handler, emit)
    assert TOKEN not in out
    assert "was rejected by the server" in out


def test_short_secrets_are_refused_since_they_would_hide_ordinary_words() -> None:
    with pytest.raises(ValueError, match="shorter than 8"):
        SecretRedactor().add("abc")


def test_redact_secrets_installs_one_filter_on_the_root_handlers() -> None:
    root = logging.getLogger()
    handler = logging.StreamHandler(io.StringIO())
    root.addHandler(handler)
    try:
        first = redact_secrets(TOKEN)
        second = redact_secrets(TOKEN)
        assert first is second
        assert handler.filters.count(first) == 1
    finally:
        root.removeHandler(handler)
