"""A session exported in the reference's layout reads back the same, with no stale approval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.events import Event
from duragent.core.messages import ToolCall
from duragent.core.snapshot import message_to_dict
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.reference_export import export_reference, write_reference
from duragent.store import EventLog, SessionStore
from duragent.store.snapshot_file import SnapshotFile
from tests.reference_sessions import PENDING_CALL, SESSION_ID, TASK, reference_sessions

REFERENCE_KINDS = {
    "session_start": {"agent", "on_disconnect", "gateway", "gateway_chat_id"},
    "session_end": {"reason"},
    "user_message": {"content", "sender_id", "sender_name"},
    "assistant_message": {"agent", "content", "usage"},
    "assistant_response": {"agent", "content", "tool_calls", "usage"},
    "tool_call": {"call_id", "tool_name", "arguments"},
    "tool_result": {"call_id", "result"},
    "tools_skipped": {"call_ids", "reason"},
    "approval_required": {"call_id", "command"},
    "approval_decision": {"call_id", "decision"},
    "status_change": {"from", "to"},
    "silent_message": {"content", "sender_id", "sender_name"},
    "error": {"code", "message"},
}
"""The reference's event kinds and their fields (digest §2.5)."""


def registry(root: Path) -> SessionRegistry:
    return SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))


async def _window(root: Path, session_id: str) -> list[dict[str, Any]]:
    reg = registry(root)
    await reg.open()
    try:
        return [message_to_dict(m) for m in await reg.handle(session_id).messages()]
    finally:
        await reg.aclose()


async def _session_of_ours(root: Path) -> str:
    """A long session (rolled over to the archive) with events the reference does not know."""
    reg = registry(root)
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="9"))
        handle = reg.handle(sid)
        for i in range(30):
            await handle.add_user_message(f"m{i}", platform_message_id=f"p{i}")
            reply = await handle.add_assistant_response(f"r{i}")
            await handle.record_delivery(reply, "telegram:9")
        await handle.pin("keep the invoices", kind="decision", source="agent")
        call = ToolCall(id="c1", name="bash", arguments='{"command": "ls"}')
        await handle.add_user_message("list the files")
        await handle.add_assistant_response("", tool_calls=(call,))
        await handle.add_tool_result("c1", True, "a\nb")
        reply = await handle.add_assistant_response("two files")
        await handle.record_delivery(reply, "telegram:9")
    finally:
        await reg.aclose()
    assert (root / sid / "events.archive.jsonl").exists()  # its start rolled over
    return sid


def _exported(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    state = json.loads((folder / "state.json").read_text())
    lines: list[dict[str, Any]] = []
    for name in ("events.archive.jsonl", "events.jsonl"):
        if (folder / name).exists():
            lines += [json.loads(line) for line in (folder / name).read_text().splitlines()]
    return state, lines


async def test_an_exported_session_reads_back_through_the_reference_reader(
    tmp_path: Path,
) -> None:
    ours = tmp_path / "ours"
    sid = await _session_of_ours(ours)
    before = await _window(ours, sid)
    export = export_reference(SessionStore(ours), sid)
    folder = write_reference(export, tmp_path / "reference")
    state, lines = _exported(folder)
    assert state["schema_version"] == "2"
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))  # no holes
    assert state["last_event_seq"] == len(lines)
    assert export.left_out["delivery"] == 31
    assert export.left_out["pin"] == 1
    for event in lines:
        known = REFERENCE_KINDS[event["type"]]
        assert set(event) - {"seq", "timestamp", "type"} <= known, event
    assert await _window(tmp_path / "reference", sid) == before
    migrated = SnapshotFile(tmp_path / "reference" / sid).read()
    assert migrated is not None
    assert migrated.task == "m0"  # from the exported archive


async def test_an_approval_duragent_ran_is_not_exported_as_pending(
    tmp_path: Path,
) -> None:
    """The issue: the reference's state.json showed an approval duragent had run."""
    (sid,) = reference_sessions(tmp_path / "ws")
    reg = registry(tmp_path / "ws")
    await reg.open()
    try:
        handle = reg.handle(sid)
        await handle.record_decision(PENDING_CALL, ApprovalDecision.ALLOW_ONCE)
        await handle.add_tool_result(PENDING_CALL, True, "DROP TABLE")
        await handle.add_assistant_response("Dropped invoices.legacy.")
        assert (await handle.memory()).task == TASK
    finally:
        await reg.aclose()
    folder = write_reference(export_reference(SessionStore(tmp_path / "ws"), sid), tmp_path / "out")
    state, lines = _exported(folder)
    assert "pending_approval" not in state["config"]
    kinds = [e["type"] for e in lines]
    assert kinds[-3:] == ["approval_decision", "tool_result", "assistant_response"]
    assert not (tmp_path / "ws" / sid / "state.json").exists()  # nothing stale left behind
    back = await _window(tmp_path / "out", sid)
    assert back[-1] == {"role": "assistant", "content": "Dropped invoices.legacy."}
    info_reg = registry(tmp_path / "out")
    await info_reg.open()
    try:
        assert (await info_reg.info(sid)).pending_approval is None
    finally:
        await info_reg.aclose()


async def test_a_pending_approval_is_exported_whole_for_the_reference_to_resume(
    tmp_path: Path,
) -> None:
    (sid,) = reference_sessions(tmp_path / "ws")
    SessionStore(tmp_path / "ws").open()  # migrated: its state.json set aside
    export = export_reference(SessionStore(tmp_path / "ws"), sid)
    approval = export.state["config"]["pending_approval"]
    assert approval["call_id"] == PENDING_CALL
    assert approval["tool_name"] == "bash"
    assert approval["requester_id"] == "7001"
    assert approval["messages"][-1]["tool_calls"][0]["id"] == PENDING_CALL
    assert export.state["checkpoint_seq"] == 7
    assert [e["seq"] for e in export.events] == [8, 9, 10, 11]  # what the reference replays
    folder = write_reference(export, tmp_path / "out")
    pending = PendingApproval.from_dict(approval)
    reg = registry(tmp_path / "out")
    await reg.open()
    try:
        assert (await reg.info(sid)).pending_approval == pending
        assert (await reg.handle(sid).memory()).task == TASK
    finally:
        await reg.aclose()
    assert folder.name == SESSION_ID


def test_an_export_never_overwrites_a_session(tmp_path: Path) -> None:
    (sid,) = reference_sessions(tmp_path / "ws")
    export = export_reference(SessionStore(tmp_path / "ws"), sid)
    with pytest.raises(FileExistsError):
        write_reference(export, tmp_path / "ws")


def test_an_approval_decided_after_the_last_snapshot_is_not_exported_as_pending(
    tmp_path: Path,
) -> None:
    """A crash between the decision's durable write and the snapshot: the log says decided."""
    (sid,) = reference_sessions(tmp_path)
    SessionStore(tmp_path).open()
    decided = Event.approval_decision(12, call_id=PENDING_CALL, decision=ApprovalDecision.DENY)
    EventLog(tmp_path / sid).append([decided])
    snapshot = SnapshotFile(tmp_path / sid).read()
    assert snapshot is not None
    assert snapshot.pending_approval is not None  # the snapshot alone still says pending
    export = export_reference(SessionStore(tmp_path), sid)
    assert "pending_approval" not in export.state["config"]
    assert export.state["last_event_seq"] == 12
