"""Loading never resumes a session without events its snapshot says were written."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from duragent.core.messages import Role
from duragent.session import NewSession, RegistrySettings, SessionQuarantinedError, SessionRegistry
from duragent.store import SessionStore


async def _session_with_messages(root: Path, count: int, **new: Any) -> str:
    """A stopped session with ``count`` user messages (and their snapshot)."""
    reg = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a", **new))
        for i in range(count):
            await reg.handle(sid).add_user_message(content=f"m{i}")
            await reg.handle(sid).add_assistant_response(content=f"r{i}")
    finally:
        await reg.aclose()
    return sid


async def _texts(root: Path, sid: str) -> list[str]:
    reg = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        return [m.text for m in await reg.handle(sid).messages() if m.role is Role.USER]
    finally:
        await reg.aclose()


async def _quarantine_reason(root: Path, sid: str) -> str:
    reg = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        with pytest.raises(SessionQuarantinedError) as caught:
            await reg.info(sid)
        return caught.value.reason
    finally:
        await reg.aclose()


def _state(root: Path, sid: str) -> dict[str, int]:
    text = (root / sid / "state.yaml").read_text()
    return {
        key: int(line.split(":")[1])
        for line in text.splitlines()
        for key in ("checkpoint_seq", "last_event_seq")
        if line.startswith(key + ":")
    }


async def test_a_missing_log_the_snapshot_needs_quarantines_instead_of_resuming_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sid = await _session_with_messages(tmp_path, 3)
    seqs = _state(tmp_path, sid)
    assert seqs["last_event_seq"] > seqs["checkpoint_seq"]  # the snapshot relies on the log
    (tmp_path / sid / "events.jsonl").unlink()
    with caplog.at_level(logging.ERROR):
        reason = await _quarantine_reason(tmp_path, sid)
    assert "missing" in reason
    assert "events.jsonl" in reason
    assert any("missing" in r.getMessage() and r.levelno >= logging.ERROR for r in caplog.records)
    assert (tmp_path / "_quarantine" / sid / "state.yaml").is_file()


async def test_a_garbage_log_quarantines_the_session(tmp_path: Path) -> None:
    sid = await _session_with_messages(tmp_path, 3)
    (tmp_path / sid / "events.jsonl").write_bytes(b"\x00\x01garbage\nnot json either\n")
    reason = await _quarantine_reason(tmp_path, sid)
    assert "missing or unreadable" in reason


async def test_a_hole_in_the_middle_of_the_log_quarantines_the_session(tmp_path: Path) -> None:
    sid = await _session_with_messages(tmp_path, 3, rollover="disabled")
    log = tmp_path / sid / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    checkpoint = _state(tmp_path, sid)["checkpoint_seq"]
    # overwrite an event after the checkpoint with garbage: a hole, not a torn tail
    victim = next(i for i, line in enumerate(lines) if json.loads(line)["seq"] == checkpoint + 1)
    lines[victim] = '{"seq": garbage\n'
    log.write_text("".join(lines))
    reason = await _quarantine_reason(tmp_path, sid)
    assert f"events {checkpoint + 1} are missing" in reason


async def test_a_torn_last_line_is_a_crash_not_corruption(tmp_path: Path) -> None:
    sid = await _session_with_messages(tmp_path, 2)
    with (tmp_path / sid / "events.jsonl").open("a") as fh:
        fh.write('{"seq": 99, "type": "user_mes')
    assert await _texts(tmp_path, sid) == ["m0", "m1"]


async def test_a_lost_snapshot_is_rebuilt_from_the_archive_and_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sid = await _session_with_messages(tmp_path, 60)  # enough for snapshots and rollovers
    folder = tmp_path / sid
    first_live = json.loads((folder / "events.jsonl").read_text().splitlines()[0])["seq"]
    assert first_live > 1  # the start of the conversation is only in the archive
    (folder / "state.yaml").unlink()
    with caplog.at_level(logging.ERROR):
        texts = await _texts(tmp_path, sid)
    assert texts == [f"m{i}" for i in range(60)]
    assert any("rebuilt" in r.getMessage() for r in caplog.records)


async def test_a_lost_snapshot_with_a_discarded_log_start_is_quarantined(tmp_path: Path) -> None:
    sid = await _session_with_messages(tmp_path, 60, rollover="discard")
    (tmp_path / sid / "state.yaml").unlink()
    reason = await _quarantine_reason(tmp_path, sid)
    assert "no log start" in reason


async def test_events_missing_from_the_log_are_recovered_from_the_archive(tmp_path: Path) -> None:
    sid = await _session_with_messages(tmp_path, 3, rollover="disabled")
    folder = tmp_path / sid
    # an operator moved the log aside as an "archive": the events are still all there
    (folder / "events.jsonl").rename(folder / "events.archive.jsonl")
    assert await _texts(tmp_path, sid) == ["m0", "m1", "m2"]
