"""A rollover the disk refuses costs the session nothing: the turn goes on, the failure is
logged as a ``StorageError``, and after a restart every message and event is still there."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from duragent.errors import StorageError
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from tests.store.failing_ops import FailingFileOps


@pytest.mark.parametrize("only", ["archive", "events.jsonl."])
async def test_a_failed_rollover_is_logged_and_loses_nothing(
    tmp_path: Path, only: str, caplog: pytest.LogCaptureFixture
) -> None:
    ops = FailingFileOps()
    ops.only = only  # the archive append, or the new live log (its temp file), fails:
    ops.failing = ops.fail_fsync = True  # its write, or its fsync when it has no lines
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a", rollover="archive"))
        with caplog.at_level(logging.ERROR, logger="duragent.session.journal"):
            for i in range(60):  # past the first checkpoint: snapshot, then rollover
                await reg.handle(sid).add_user_message(content=f"q{i}")
            await reg.handle(sid).snapshot()
    finally:
        await reg.aclose()
    failures = [r for r in caplog.records if "rollover failed" in r.getMessage()]
    assert failures, "the rollover was never attempted"
    assert all(isinstance(r.args[-1], StorageError) for r in failures)  # type: ignore[index]
    assert ops.failures >= len(failures)

    restarted = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await restarted.open()
    try:
        messages = await restarted.handle(sid).messages()
        full = await restarted.handle(sid).events(include_archive=True)
    finally:
        await restarted.aclose()
    assert [m.text for m in messages if m.role.value == "user"] == [f"q{i}" for i in range(60)]
    assert [e.seq for e in full] == list(range(1, full[-1].seq + 1))
