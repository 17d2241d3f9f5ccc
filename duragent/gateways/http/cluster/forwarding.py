"""A session's requests go to the node that owns it: forwarding, take-over, retry after a fence.

With a shared store (PostgreSQL) one node at a time owns a session's actor (a lease, see
``store.ownership``). Any node may receive a request for any session (a load balancer in
front); ``SessionForwarding.serve`` runs the route's handler and:

- ``LeaseHeldError`` (another node owns the session): the owner's address and heartbeat are
  read from the ``nodes`` table. A live owner (heartbeat younger than two renewal periods)
  gets the request *forwarded* (proxied, SSE streamed through) and its answer is this
  request's answer. A gone owner (no heartbeat, refused connection, or its heartbeat going
  stale while the forwarded request waits: a paused process) is not waited on: this node
  sleeps until the owner's lease expires, then serves the request itself (its actor claims
  the session, replays it from the database and continues).
- ``FencedWriteError`` (this node lost the session while paused; the registry already
  dropped the actor), before or after the request's message was recorded: served again from
  the top, which finds the new owner (forward) or takes the session back. The request's
  message key (``api.sessions.message_key``) makes the message recorded once wherever it is
  served, and a recorded one without an answer gets its turn there.

Forwarding, not redirect: clients (and the reference's CLI) do not follow redirects on POST,
and the owner's address may be internal. The hop is signed (``cluster/hops.py``, the one
scheme, shared with the chat relay): ``HMAC-SHA256`` over the method, path, time, sender and
body hash with the deployment's key (``cluster_secret``), so a
forwarded request is authenticated as coming from a node, is served by the owner even when
the client's address is not loopback (the first node applied the access rules; the client's
``Authorization`` travels with it), is never forwarded again (one hop), and is refused
unserved when older than a lease (its sender gave up on it and served it itself).
Requests carrying the forwarding headers without a valid signature are refused (403).
Only ``/api/v1/sessions/{id}/…``, ``POST /v1/chat/completions`` (the OpenAI-compatible API,
streamed or not) and the chat gateways' webhook paths are forwarded, to addresses read from
the database, never from the request: the hop is not an open proxy.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from duragent.cluster.hops import (
    FORWARDED_AT,
    FORWARDED_BY,
    MOVED,
    REQUEST_KEY,
    SIGNATURE,
    Hops,
    sign,
)
from duragent.errors import StorageError
from duragent.gateways.http.server.problem import ProblemError
from duragent.gateways.http.server.security import read_body
from duragent.observability.metrics import Metrics
from duragent.store import FencedWriteError, LeaseHeldError, NodeDirectory

__all__ = [
    "FORWARDED_AT",
    "FORWARDED_BY",
    "IDEMPOTENCY_KEY",
    "MOVED",
    "SIGNATURE",
    "SessionForwarding",
    "sign",
]

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]

IDEMPOTENCY_KEY = "idempotency-key"
"""A client's key for a message (``api.sessions.message_key``): the same key, recorded once."""
_PASSED_ON = (
    "authorization",
    "content-type",
    "accept",
    "accept-encoding",
    "user-agent",
    "last-event-id",
    "x-telegram-bot-api-secret-token",  # a forwarded webhook: the owner checks it again
)
_DROPPED_BACK = {
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "server",
    "date",
}
MAX_ATTEMPTS = 6
"""Times a request is served again after fenced writes before giving up (503)."""
POLL_SECONDS = 0.5
"""While a gone owner's lease runs out, the session is claimed again this often."""


def _target(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


async def _keep_body(request: Request) -> None:
    """Read the body into the request (at most the path's ``body_limit``: 413 beyond)."""
    if hasattr(request, "_body"):
        return
    request._body = await read_body(request)


class SessionForwarding:
    """Serves session routes on whichever node owns the session (see module docstring)."""

    def __init__(self, nodes: NodeDirectory, lease_seconds: float) -> None:
        self._lease = lease_seconds
        self.hops = Hops(nodes, lease_seconds)
        """The signing, the client and the live-or-gone test shared with the chat relay."""
        self.forwarded = 0
        self.taken_over = 0
        self.fenced_retries = 0
        """Requests served again because a write of theirs was refused by the lease fence."""

    def instrument(self, metrics: Metrics) -> None:
        """Export the counters at scrape time (``duragent_session_forwarding``)."""
        metrics.sample(
            "duragent_session_forwarding",
            "Since start: session requests forwarded to their owner, sessions taken over from "
            "a gone owner, requests served again after a fenced write.",
            lambda: [
                (("forwarded",), float(self.forwarded)),
                (("taken_over",), float(self.taken_over)),
                (("fenced_retry",), float(self.fenced_retries)),
            ],
            labels=("outcome",),
        )

    async def aclose(self) -> None:
        """Close the connections to other nodes."""
        await self.hops.aclose()

    async def verify(self, request: Request) -> bool:
        """Whether ``request`` is a hop from another node (403 when it claims so falsely)."""
        by = request.headers.get(FORWARDED_BY)
        if by is None:
            return False
        at = request.headers.get(FORWARDED_AT, "")
        given = request.headers.get(SIGNATURE, "")
        await _keep_body(request)
        body = await request.body()
        request_key = request.headers.get(REQUEST_KEY, "")
        age = await self.hops.check(
            request.method, _target(request), by, at, given, body, request_key
        )
        if age is None:
            raise ProblemError(403, "invalid node-to-node signature")
        if age > self._lease:  # its sender has served it itself by now
            raise ProblemError(503, f"forwarded request {age:.1f} s old: not served")
        return True

    async def serve(self, request: Request, handler: Handler, *, hop: bool) -> Response:
        """``handler(request)`` here, at the owner, or here after taking the session over."""
        deadline = time.monotonic() + self._lease + 2.0
        await _keep_body(request)  # read once: the handler reads it, and a retry or hop again
        # One key for every place this request is served (here, the owner, here again after
        # the owner went away): its message is recorded once (``api.sessions.message_key``).
        given = request.headers.get(REQUEST_KEY) if hop else request.headers.get(IDEMPOTENCY_KEY)
        request.state.message_key = given or uuid.uuid4().hex
        fenced = 0
        waited = False
        while fenced < MAX_ATTEMPTS:
            try:
                answer = await handler(request)
            except FencedWriteError as exc:  # nothing of this request was recorded
                fenced += 1
                self.fenced_retries += 1
                log.warning(
                    "%s: %s; serving it again where the session lives", request.url.path, exc
                )
            except StorageError as exc:
                if not isinstance(exc.__cause__, FencedWriteError):
                    raise
                # Fenced after its message was recorded: served again under the same message
                # key, the owner finds the message and runs its turn (recorded once).
                fenced += 1
                self.fenced_retries += 1
                log.warning("%s: %s; its turn runs where the session lives", request.url.path, exc)
            except LeaseHeldError as exc:
                if hop:  # one hop only: the sender looks the owner up again
                    moved = {"Retry-After": "1", MOVED: exc.owner}
                    raise ProblemError(503, f"{exc}; the session moved", headers=moved) from None
                forwarded = await self._to_owner(request, exc)
                if forwarded is not None:
                    return forwarded
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                # The owner is gone (or stopping: it released its leases a moment after it
                # left the nodes table): claim again at its expiry, or sooner, every ½ s.
                wait = min(exc.expires_in + 0.05, POLL_SECONDS, left)
                log.info(
                    "session %s: owner %s is gone; claiming in %.2f s",
                    exc.session_id,
                    exc.owner,
                    wait,
                )
                await asyncio.sleep(wait)
                waited = True
            else:
                if waited:
                    self.taken_over += 1
                return answer
        raise ProblemError(
            503, "the session's owner changed repeatedly; retry", headers={"Retry-After": "1"}
        )

    async def _to_owner(self, request: Request, held: LeaseHeldError) -> Response | None:
        """The owner's answer, or None when the owner is gone (take over instead)."""
        node = await self.hops.live_node(held.owner)
        if node is None:
            return None
        body = await request.body()
        target = _target(request)
        headers = {k: v for k in _PASSED_ON if (v := request.headers.get(k)) is not None}
        headers.setdefault("accept-encoding", "identity")  # the bytes go back as they come
        request_key: str = request.state.message_key
        headers |= await self.hops.signed(request.method, target, body, request_key)
        outgoing = self.hops.client.build_request(
            request.method, node.base_url.rstrip("/") + target, headers=headers, content=body
        )
        answer = await self.hops.send_watching(outgoing, node)
        if answer is None:
            return None
        if answer.status_code == 503 and MOVED in answer.headers:  # it moved on: look again
            await answer.aclose()
            return None
        self.forwarded += 1
        back = {k: v for k, v in answer.headers.items() if k.lower() not in _DROPPED_BACK}
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers=back,
            background=BackgroundTask(answer.aclose),
        )
