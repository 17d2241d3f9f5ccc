"""Who a log line is about: the session, agent, front end and turn, carried by contextvars.

One turn crosses a front end (HTTP request, chat update), the turn runner, the model client
and the tools; each logs with its own logger and knows only part of the story. A front end
binds what it knows (``log_context``) before it runs a turn and every line logged inside,
tasks it starts included (a task copies the context it was created in, ``to_thread`` too),
carries the same fields, so ``grep turn_…`` follows one turn end to end. The JSON log format
(``jsonlog``) writes them; the turn id is also given to the client (SSE ``start`` event,
``X-Duragent-Turn`` header), which closes the loop from a user's report to the server's log.

Fields are only ever *added* inside a scope, never silently replaced by ``None``: an inner
scope that does not know the agent keeps the outer one's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar, Token
from types import MappingProxyType

from duragent.core.ids import new_ulid

__all__ = ["FIELDS", "attach", "current", "detach", "log_context", "new_turn_id", "turn_scope"]

FIELDS = ("session_id", "agent", "front_end", "turn_id")
"""The fields a log line may carry, in the order the JSON format writes them."""

_EMPTY: Mapping[str, str] = MappingProxyType({})
_CONTEXT: ContextVar[Mapping[str, str]] = ContextVar("duragent_log_context", default=_EMPTY)


def new_turn_id() -> str:
    """A turn id: ``turn_<ULID>`` (sortable by start time, like session and message ids)."""
    return f"turn_{new_ulid()}"


def current() -> Mapping[str, str]:
    """The fields bound here (read-only)."""
    return _CONTEXT.get()


@contextlib.contextmanager
def log_context(
    *,
    session_id: str | None = None,
    agent: str | None = None,
    front_end: str | None = None,
    turn_id: str | None = None,
) -> Iterator[Mapping[str, str]]:
    """Bind the given fields for the ``with`` block (``None``: keep what is bound)."""
    given = {"session_id": session_id, "agent": agent, "front_end": front_end, "turn_id": turn_id}
    merged = dict(_CONTEXT.get())
    merged.update({k: v for k, v in given.items() if v is not None})
    token = _CONTEXT.set(MappingProxyType(merged))
    try:
        yield _CONTEXT.get()
    finally:
        _CONTEXT.reset(token)


@contextlib.contextmanager
def turn_scope(session_id: str) -> Iterator[str]:
    """The turn's scope for ``session_id``: its turn id, minted unless a front end bound one.

    The turn runner enters this for every turn, so a front end that binds nothing (a chat
    gateway, the scheduler) still gets a turn id and the session id on every line.
    """
    turn_id = _CONTEXT.get().get("turn_id") or new_turn_id()
    with log_context(session_id=session_id, turn_id=turn_id):
        yield turn_id


def attach(fields: Mapping[str, str]) -> Token[Mapping[str, str]]:
    """Bind ``fields`` (a ``current()`` taken elsewhere) in this thread until ``detach``.

    For a thread that serves requests from many contexts (a session actor): each request
    carries the fields of the task that sent it, so the actor's lines name that turn too.
    """
    return _CONTEXT.set(fields)


def detach(token: Token[Mapping[str, str]]) -> None:
    """Undo the ``attach`` that returned ``token``."""
    _CONTEXT.reset(token)
