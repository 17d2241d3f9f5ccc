"""uvicorn's HTTP/1.1 protocol with the timeouts it lacks: request head and request body.

uvicorn closes a keep-alive connection idle *between* requests (``timeout_keep_alive``), but
a connection that never sends a byte, a request head that trickles in, or a body that trickles
in are waited for forever, each holding a descriptor and (for a body) a
``server.max_connections`` slot. This protocol adds two timers:

- **head**: from the connection opening, or from the first byte of a later request, the whole
  request line and headers must arrive within ``server.header_timeout_seconds``. A connection
  that sent nothing is just closed; one that sent part of a head gets ``408`` and is closed.
- **body**: once the head is in, the body must arrive within
  ``server.body_timeout_seconds``. Time during which the server itself is not reading (the
  app has not consumed what arrived, or has not yet asked for a body the client holds back
  until ``100 Continue``) is not held against the client: the timer is re-armed.
  On expiry: ``408`` (when no response was started) and close; the app sees the client as
  gone, so its slot is freed.

Nothing runs while a response is being sent: an SSE stream, however long, is never cut by
these timers (its own keep-alive pings and the model's idle timeout govern it).
``server.connection_idle_timeout_seconds`` is uvicorn's keep-alive timeout.

The connection also tells the acceptor (``listener.py``, through ``hooks``) when it is quiet
(between requests, or nothing sent yet) or busy, so that at the connection cap the acceptor
can close the longest-quiet one for a connection that waits (``close_if_quiet``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from duragent.gateways.http.server.listener import ConnectionHooks
from duragent.gateways.http.server.problem import PROBLEM_CONTENT_TYPE, problem

__all__ = ["TimedH11Protocol", "timed_protocol"]

log = logging.getLogger(__name__)


def _problem_response(status: int, detail: str) -> bytes:
    """A whole problem+json response with ``Connection: close``, as bytes for the transport.

    Written directly because h11 cannot send a response before it has parsed a request.
    """
    response = problem(status, detail)
    phrase = HTTPStatus(status).phrase
    head = (
        f"HTTP/1.1 {status} {phrase}\r\n"
        f"content-type: {PROBLEM_CONTENT_TYPE}\r\n"
        f"content-length: {len(response.body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + bytes(response.body)


class TimedH11Protocol(H11Protocol):
    """H11Protocol plus head and body timeouts (see the module docstring)."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_timeout: float = 15.0
    hooks: ConnectionHooks | None = None
    """Set by the server's protocol factory to its acceptor."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.timeout_keep_alive = self.idle_timeout  # type: ignore[assignment]
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._head_started = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the head timer: a new connection must send a request in time."""
        super().connection_made(transport)
        self._arm_head()
        if self.hooks is not None:
            self.hooks.made(self)
            self.hooks.quiet(self)

    def connection_lost(self, exc: Exception | None) -> None:
        """Cancel both timers."""
        self._cancel_head()
        self._cancel_body()
        if self.hooks is not None:
            self.hooks.closed(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed h11, then move the timers along with the request's progress."""
        if self.hooks is not None:
            self.hooks.busy(self)
        if self.conn.their_state is h11.IDLE and not self._head_started:
            self._head_started = True
            if self._head_timer is None:  # a later request: its head runs from its first byte
                self._arm_head()
        super().data_received(data)
        self._track_progress()

    def on_response_complete(self) -> None:
        """After a response, a pipelined request may already be parsed: track it too."""
        super().on_response_complete()
        self._track_progress()
        if self.hooks is not None and self._is_quiet():
            self.hooks.quiet(self)

    def close_if_quiet(self) -> bool:
        """Close the connection if it is between requests (the acceptor needs room)."""
        if not self._is_quiet():
            return False
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()
        return True

    def _is_quiet(self) -> bool:
        """Not in a request: nothing of one received, no response under way."""
        return (
            self.transport is not None
            and not self.transport.is_closing()
            and self.conn.our_state is h11.IDLE
            and self.conn.their_state is h11.IDLE
            and not self._head_started
            and (self.cycle is None or self.cycle.response_complete)
        )

    def shutdown(self) -> None:
        """Stopping: a request whose body is still arriving is refused (503) and closed now.

        uvicorn would wait for its response (up to the graceful-shutdown limit), but the app
        cannot answer a body it has not got; nothing of it was accepted yet.
        """
        cycle = self.cycle
        if (
            self.conn.their_state is h11.SEND_BODY
            and cycle is not None
            and not cycle.response_started
        ):
            self._cancel_body()
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.write(_problem_response(503, "the server is shutting down"))
            self.transport.close()
            return
        super().shutdown()

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse: a problem+json 400 like every other error, then close.

        uvicorn's own answer is plain text; nothing of the request reached the app.
        """
        self.transport.write(_problem_response(400, f"malformed HTTP request: {msg}"))
        self.transport.close()

    def _track_progress(self) -> None:
        state = self.conn.their_state
        if state is h11.IDLE:
            return
        self._cancel_head()
        self._head_started = False
        if state is h11.SEND_BODY:
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(self.body_timeout, self._body_expired)
        else:
            self._cancel_body()

    def _arm_head(self) -> None:
        self._cancel_head()
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_expired)

    def _cancel_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cancel_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a response is still under way (pipelining): its end re-arms things
        if self._head_started:
            log.debug("request head not complete after %ss: 408", self.header_timeout)
            self._close_with_408(
                f"the request head did not arrive within {self.header_timeout:g} s "
                "(server.header_timeout_seconds)"
            )
        else:
            self.transport.close()

    def _body_expired(self) -> None:
        self._body_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        cycle = self.cycle
        if self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue):
            # We are not reading (the app has not taken what came, or has not asked for the
            # body a client waits to send on "Expect: 100-continue"): not the client's fault.
            self._body_timer = self.loop.call_later(self.body_timeout, self._body_expired)
            return
        log.debug("request body not complete after %ss: 408", self.body_timeout)
        if cycle is not None and not cycle.response_started:
            cycle.disconnected = True  # the app sees http.disconnect; its sends are dropped
            cycle.message_event.set()
            self._close_with_408(
                f"the request body did not arrive within {self.body_timeout:g} s "
                "(server.body_timeout_seconds)"
            )
        else:
            self.transport.close()

    def _close_with_408(self, detail: str) -> None:
        self.transport.write(_problem_response(408, detail))
        self.transport.close()


def timed_protocol(*, header: float, body: float, idle: float) -> type[TimedH11Protocol]:
    """A :class:`TimedH11Protocol` subclass with these timeouts (uvicorn takes a class)."""
    return type(
        "ConfiguredH11Protocol",
        (TimedH11Protocol,),
        {"header_timeout": header, "body_timeout": body, "idle_timeout": idle},
    )
