"""Shared helpers for mapping HTTP failures to duragent's LLMError tree.

Both providers funnel their failures through ``error_for_status`` so that a given status
means the same thing (and is retried the same way) whichever API answered it:

- an HTTP error answer maps by status (429, 401/403, 400/413/422, 5xx incl. 529);
- an error *event inside a 200 stream* carries no useful status, so its ``type``/``code``
  (``overloaded_error``, ``rate_limit_error``, ``server_error`` …) is mapped to the status the
  same failure would have had as a plain answer (``status_for_error_type``);
- a transport failure the Anthropic SDK lets escape while a stream is read (``httpx2`` errors
  such as "peer closed connection without sending complete message body") is a connection
  error or a timeout, never an "unreadable response" (``transport_failure``);
- the Anthropic SDK's aiohttp transport reports a refused or dropped connection as a *connect
  timeout* (its exception table maps every ``ClientConnectionError`` to ``ConnectTimeout``),
  so what the SDK calls a timeout is checked against its root cause
  (``timeout_or_connection``): "timed out" is said only of a real timeout. The OpenAI-
  compatible provider talks aiohttp itself and passes aiohttp's own errors to the same two
  helpers, so both providers word the same failure alike.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping

import aiohttp
import httpx
import httpx2

from duragent.errors import (
    ContextLengthExceededError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)

__all__ = [
    "CONTEXT_LENGTH_MARKERS",
    "connection_failure",
    "error_for_status",
    "looks_like_context_overflow",
    "parse_retry_after",
    "status_for_error_type",
    "status_message",
    "timeout_or_connection",
    "transport_failure",
]

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

_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
}


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


def status_for_error_type(*kinds: str | None) -> int:
    """The HTTP status an API error ``type``/``code`` stands for (500 when unknown)."""
    for kind in kinds:
        if kind and kind.lower() in _ERROR_TYPE_STATUS:
            return _ERROR_TYPE_STATUS[kind.lower()]
    return 500


def error_for_status(
    status: int,
    message: str,
    *,
    provider: str,
    headers: Mapping[str, str] | None = None,
    details: tuple[str | None, ...] = (),
    http_status: int | None = None,
) -> LLMError:
    """The LLMError for a failure that means ``status``.

    ``details`` are extra texts (error code, body message) searched for context-overflow
    wording. ``http_status`` is recorded on the error when it differs from ``status`` (an
    error event inside a 200 stream records ``None``).
    """
    recorded = status if http_status is None else (http_status or None)
    if status == 429:
        return LLMRateLimitError(
            message, status=recorded, provider=provider, retry_after=parse_retry_after(headers)
        )
    if status in (401, 403):
        return LLMAuthError(message, status=recorded, provider=provider)
    if status == 413 or (status in (400, 422) and looks_like_context_overflow(message, *details)):
        return ContextLengthExceededError(message, status=recorded, provider=provider)
    if status >= 500:  # includes Anthropic's 529 overloaded
        return LLMServerError(
            message, status=recorded, provider=provider, retry_after=parse_retry_after(headers)
        )
    if status == 408:  # the server gave up waiting: a timeout, worth another attempt
        return LLMTimeoutError(message, status=recorded, provider=provider)
    return LLMBadRequestError(message, status=recorded, provider=provider)


def status_message(status: int, raw: bytes) -> tuple[str, str]:
    """The OpenAI SDK's message for a non-2xx answer, and the error's ``code`` (``""`` when none).

    ``Error code: 429``, followed by `` - <message>`` when the body is JSON with an
    ``error.message`` (or a top-level ``message``); the rest of the body stays out of it.
    """
    message = f"Error code: {status}"
    try:
        body = json.loads(raw.decode("utf-8", "replace").strip())
    except ValueError:
        return message, ""
    error = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return message, ""
    said = error.get("message")
    if isinstance(said, str) and said:
        message += f" - {said}"
    return message, str(error.get("code") or "")


_REAL_TIMEOUTS = (TimeoutError, aiohttp.ServerTimeoutError)
"""Root causes that are timeouts (aiohttp's socket and connect timeouts derive from these)."""


def _broken_connection(exc: BaseException) -> BaseException | None:
    """The aiohttp error behind ``exc`` when it is a connection failure, not a timeout."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, _REAL_TIMEOUTS):
            return None
        if isinstance(cause, aiohttp.ClientError):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


def timeout_or_connection(exc: BaseException, provider: str) -> LLMError:
    """What an SDK timeout really was: a timeout, or a connection refused or dropped."""
    broken = _broken_connection(exc)
    if broken is not None:
        return LLMConnectionError(f"{provider}: connection failed: {broken}", provider=provider)
    return LLMTimeoutError(f"{provider}: request timed out", provider=provider)


def connection_failure(exc: BaseException, provider: str) -> LLMConnectionError:
    """A connection error that names its root cause (the SDKs say only "Connection error.")."""
    detail = _broken_connection(exc) or exc
    return LLMConnectionError(f"{provider}: connection failed: {detail}", provider=provider)


def transport_failure(exc: BaseException, provider: str) -> LLMError | None:
    """A timeout or connection error for an HTTP transport exception, else ``None``."""
    broken = _broken_connection(exc)
    if broken is not None:
        return LLMConnectionError(f"{provider}: connection broke: {broken}", provider=provider)
    if isinstance(exc, httpx2.TimeoutException | httpx.TimeoutException):
        message = f"{provider}: timed out reading the answer: {exc}"
        return LLMTimeoutError(message, provider=provider)
    if isinstance(exc, httpx2.TransportError | httpx.TransportError):
        return LLMConnectionError(f"{provider}: connection broke: {exc}", provider=provider)
    return None
