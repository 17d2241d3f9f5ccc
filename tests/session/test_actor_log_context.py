"""A session actor's log lines carry the turn that sent the request (``observability.logctx``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent.observability.logctx import current, log_context
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.bridge import Request
from duragent.session.operations import SessionOps
from duragent.store import SessionStore
from tests.polling import eventually


class _Grab(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, dict[str, str]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), dict(current())))


@pytest.fixture
def grabbed() -> Iterator[_Grab]:
    grab = _Grab()
    logger = logging.getLogger("duragent.session.actor")
    logger.addHandler(grab)
    try:
        yield grab
    finally:
        logger.removeHandler(grab)


async def test_a_line_the_actor_thread_logs_names_the_senders_turn(
    tmp_path: Path, grabbed: _Grab
) -> None:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        ref = reg._live[sid].ref  # a told request that fails is logged by the actor itself
        with log_context(session_id=sid, turn_id="turn_from_http"):
            ref.tell(Request(SessionOps.set_status, ("no_such_status",)))  # no SessionStatus
        ref.tell(Request(SessionOps.set_status, ("no_such_status",)))  # outside any turn

        assert await eventually(lambda: len(grabbed.seen) == 2)
        (first, in_turn), (_, outside) = grabbed.seen
        assert "set_status failed" in first
        assert in_turn == {"session_id": sid, "turn_id": "turn_from_http"}
        assert outside == {}  # the actor thread kept nothing of the earlier request
    finally:
        await reg.aclose()
