"""python-telegram-bot's HTTP requests over aiohttp instead of httpx.

PTB lets an application bring its own transport (``telegram.request.BaseRequest``); this is
one on aiohttp, which duragent already depends on. Why: at a few hundred replies a second the
serving process spent most of its CPU in httpx/httpcore (pure Python parsing, and a pool that
walks every queued request against every connection whenever one starts or ends), against a
fraction of that in aiohttp (C parser, a connector with a FIFO of waiters). The measurements
are in ``bench/README.md`` ("Telegram gateway"); the choice in
``specs/202611240330.telegram-gateway.md``.

The wire format is PTB's own: parameters form-encoded exactly as its ``HTTPXRequest`` sends
them (``RequestData.json_parameters``), files as multipart, PTB's User-Agent. Errors map to
PTB's: a timeout is ``TimedOut``, any other transport failure ``NetworkError``; PTB itself
turns the Bot API's answers into ``TelegramError``s.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import aiohttp
from telegram._utils.defaultvalue import DefaultValue
from telegram._utils.types import ODVInput
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

from duragent.frontkit.under_way import UnderWay

__all__ = ["AiohttpRequest"]

log = logging.getLogger(__name__)

_FORM = {"Content-Type": "application/x-www-form-urlencoded"}


class AiohttpRequest(BaseRequest):
    """A ``BaseRequest`` on one ``aiohttp.ClientSession`` (see module docstring).

    ``connections`` bounds the requests in flight (the rest wait in aiohttp's FIFO, as they
    wait for a connection in PTB's default pool); the timeouts are PTB's defaults unless a
    call passes its own (``getUpdates`` passes its long-poll read timeout).
    """

    def __init__(
        self,
        *,
        connections: int = 256,
        read_timeout: float | None = 5.0,
        write_timeout: float | None = 5.0,
        connect_timeout: float | None = 5.0,
        pool_timeout: float | None = 1.0,
        media_write_timeout: float | None = 20.0,
    ) -> None:
        self._connections = connections
        self._read = read_timeout
        self._write = write_timeout
        self._connect = connect_timeout
        self._pool = pool_timeout
        self._media_write = media_write_timeout
        self._session: aiohttp.ClientSession | None = None
        self._under_way = UnderWay("telegram")

    @property
    def read_timeout(self) -> float | None:
        """The read timeout of a call that gives none (PTB adds it to long-poll waits)."""
        return self._read

    async def initialize(self) -> None:
        """Open the session (idempotent)."""
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._connections, limit_per_host=0)
            self._session = aiohttp.ClientSession(
                connector=connector, headers={"User-Agent": self.USER_AGENT}
            )

    async def shutdown(self) -> None:
        """Refuse new requests, let those under way end, then close (idempotent).

        Closing cuts a request under way ("Server disconnected"), and the Bot API may have
        taken it already: a message sent but not known as sent, which the next process life
        sends again. A graceful stop lets it end instead (its answer is recorded as usual);
        a request made meanwhile finds no session and is refused, never sent. The wait is
        ``frontkit.under_way``'s (bounded).
        """
        session, self._session = self._session, None
        if session is None or session.closed:
            return
        await self._under_way.ended()
        await session.close()

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        write_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        connect_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        pool_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        """One HTTP request; the status and the body (see ``BaseRequest.do_request``)."""
        session = self._session
        if session is None or session.closed:
            raise RuntimeError("This AiohttpRequest is not initialized!")
        files = request_data.multipart_data if request_data else None
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=_given(pool_timeout, self._pool),
            sock_connect=_given(connect_timeout, self._connect),
            sock_read=_given(read_timeout, self._read),
        )
        del write_timeout  # aiohttp has no write timeout of its own: the read one follows it
        body: Any = None
        headers: dict[str, str] | None = None
        if files:
            body = _multipart(request_data.json_parameters if request_data else {}, files)
        elif request_data is not None and request_data.parameters:
            body = urlencode(request_data.json_parameters).encode()
            headers = _FORM
        try:
            with self._under_way.one():
                async with session.request(
                    method, url, data=body, headers=headers, timeout=timeout
                ) as response:
                    payload = await response.read()
        except TimeoutError as exc:
            raise TimedOut from exc
        except aiohttp.ClientError as exc:
            raise NetworkError(f"aiohttp.{type(exc).__name__}: {exc}") from exc
        # the URL holds the bot token: the root handlers' filter (observability/redact.py) hides it
        log.debug("%s %s: HTTP %d", method, url, response.status)
        return response.status, payload


def _given(value: ODVInput[float], default: float | None) -> float | None:
    """A call's own timeout, or this transport's default when it gave none."""
    return default if isinstance(value, DefaultValue) else value


def _multipart(fields: dict[str, str], files: dict[str, Any]) -> aiohttp.FormData:
    """Parameters and files as ``multipart/form-data`` (an upload: a photo, a document)."""
    form = aiohttp.FormData(quote_fields=False)
    for name, value in fields.items():
        if name not in files:
            form.add_field(name, value)
    for name, part in files.items():
        filename, content, mimetype = _file_part(part)
        form.add_field(name, content, filename=filename, content_type=mimetype)
    return form


def _file_part(part: Any) -> tuple[str | None, Any, str | None]:
    """PTB's ``(filename, content[, mimetype])`` tuple, or bare content."""
    if isinstance(part, tuple):
        filename = part[0] if len(part) > 0 else None
        content = part[1] if len(part) > 1 else b""
        mimetype = part[2] if len(part) > 2 else None
        return filename, content, mimetype
    return None, part, None
