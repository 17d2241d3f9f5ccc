"""``duragent session export ID --format reference``: a session as the reference lays it out.

For people who go back to the reference (giosakti/duragent): at first start we convert its
sessions and set its ``state.json`` aside (``store.reference_migration``), so the reference
no longer sees them. This writes one session back in its layout:

```
<folder>/<session_id>/state.json            schema "2": conversation, checkpoint, config
<folder>/<session_id>/events.jsonl          events after the checkpoint (the reference replays)
<folder>/<session_id>/events.archive.jsonl  the events before it (history only)
```

- The state is read, never written: the snapshot plus the replay of the log, the same rules
  as a load (``replay``, ``SessionState``) without the repair a load persists. So the
  pending approval is the one still pending *now*: one decided since the last snapshot is
  not exported as pending (the reference ignores approval events on replay and takes the
  approval from ``state.json`` alone).
- Events are written in the reference's shapes (``digest`` §2.5): our added fields are left
  out (platform ids, budgets, ``answers_seq``…), and so are the kinds it does not know
  (``delivery``, ``summary``, ``pin``, ``unpin``, ``steering``). The rest are numbered again
  without holes (our reader refuses a log with holes; nothing the reference reads names a
  seq), and ``checkpoint_seq`` and ``last_event_seq`` with them.
- The approval gets the reference's ``messages`` (the loop's list it resumes with): the
  window's messages; the system prompt is not stored anywhere, so the reference resumes
  that one turn without it.
- ``state.json`` is written last (atomically): the reference counts a folder as a session
  only once it has one, so it never sees half an export.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.core.approval import PendingApproval
from duragent.core.events import Event, now_rfc3339
from duragent.core.payloads import (
    ApprovalDecisionData,
    ApprovalRequiredData,
    AssistantResponseData,
    ErrorData,
    EventType,
    SessionEndData,
    SessionStartData,
    SilentMessageData,
    StatusChangeData,
    ToolCallRecord,
    ToolResultData,
    ToolsSkippedData,
    UserMessageData,
)
from duragent.core.snapshot import message_to_dict
from duragent.errors import NotFoundError
from duragent.session.replay import events_after, rebuild_without_snapshot
from duragent.session.state import SessionState
from duragent.store import SessionStorage
from duragent.store.atomic import atomic_write

__all__ = ["REFERENCE_SCHEMA_VERSION", "ReferenceExport", "export_reference", "write_reference"]

REFERENCE_SCHEMA_VERSION = "2"


@dataclass(frozen=True, slots=True)
class ReferenceExport:
    """One session in the reference's files (see module docstring)."""

    session_id: str
    state: dict[str, Any]
    """``state.json``."""
    events: list[dict[str, Any]]
    """``events.jsonl``: the events after ``checkpoint_seq``."""
    archive: list[dict[str, Any]]
    """``events.archive.jsonl``: the events up to it."""
    left_out: Counter[str]
    """Events of each kind the reference does not know (not exported)."""


def export_reference(store: SessionStorage, session_id: str) -> ReferenceExport:
    """Read ``session_id`` from ``store`` (nothing is written) as the reference's files.

    Raises ``NotFoundError`` when there is no such session, ``SnapshotCorruptError`` when
    its files cannot be trusted, ``OSError`` when the machine refuses a read.
    """
    if not store.exists(session_id):
        raise NotFoundError(f"no session {session_id}")
    log = store.event_log(session_id)
    snapshots = store.snapshot(session_id)
    try:
        snapshot = snapshots.read()
        if snapshot is None:
            snapshot, replay = rebuild_without_snapshot(session_id, log, snapshots)
        else:
            replay = events_after(session_id, log, snapshots, snapshot)
        live, _ = log.read(0)
        archived = log.read_archive()
    finally:
        log.close()
    state = SessionState(snapshot)
    for event in replay:
        state.apply(event)
    first_live = live[0].seq if live else None
    history = [e for e in archived if first_live is None or e.seq < first_live] + live
    return _export(state, history, fallback_time=snapshot.created_at)


def write_reference(export: ReferenceExport, folder: Path) -> Path:
    """Write ``export`` into ``folder/<session_id>/`` (a new or empty folder); return it.

    Raises ``FileExistsError`` when that folder holds files already (an export never
    overwrites a session).
    """
    target = folder / export.session_id
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} exists and is not empty")
    target.mkdir(parents=True, exist_ok=True)
    if export.archive:
        (target / "events.archive.jsonl").write_bytes(_lines(export.archive))
    (target / "events.jsonl").write_bytes(_lines(export.events))
    state = json.dumps(export.state, indent=2, ensure_ascii=False) + "\n"
    atomic_write(target / "state.json", state.encode())
    return target


def _lines(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def _export(state: SessionState, history: list[Event], *, fallback_time: str) -> ReferenceExport:
    """The reference's files of ``state`` and its ``history`` (numbered again, no holes)."""
    left_out: Counter[str] = Counter()
    kept: list[dict[str, Any]] = []
    dropped_before: list[tuple[int, int]] = []  # (seq, events left out up to it)
    dropped = 0
    when = fallback_time
    for event in history:
        shape = _SHAPES.get(event.type)
        if shape is None:
            left_out[event.type] += 1
            dropped += 1
            dropped_before.append((event.seq, dropped))
            continue
        when = event.timestamp or when
        payload = shape(event.data)
        kept.append({"seq": event.seq - dropped, "timestamp": when, "type": event.type, **payload})

    def renumbered(seq: int) -> int:
        return seq - max((n for s, n in dropped_before if s <= seq), default=0)

    checkpoint = renumbered(state.checkpoint_seq)
    last = renumbered(state.last_seq)
    return ReferenceExport(
        session_id=state.session_id,
        state=_state_json(state, checkpoint=checkpoint, last=last),
        events=[e for e in kept if e["seq"] > checkpoint],
        archive=[e for e in kept if e["seq"] <= checkpoint],
        left_out=left_out,
    )


def _state_json(state: SessionState, *, checkpoint: int, last: int) -> dict[str, Any]:
    """``state.json`` in the reference's schema 2 (``digest`` §2.4)."""
    config: dict[str, Any] = {"on_disconnect": state.on_disconnect}
    if state.gateway is not None:
        config["gateway"] = state.gateway
    if state.gateway_chat_id is not None:
        config["gateway_chat_id"] = state.gateway_chat_id
    if state.pending_approval is not None:
        config["pending_approval"] = _approval(state)
    config["silent_buffer_cap"] = state.silent_cap
    config["actor_message_limit"] = state.message_limit
    return {
        "schema_version": REFERENCE_SCHEMA_VERSION,
        "session_id": state.session_id,
        "agent": state.agent,
        "status": state.status.value,
        "created_at": state.created_at,
        "snapshot_at": now_rfc3339(),
        "last_event_seq": last,
        "checkpoint_seq": checkpoint,
        "conversation": [message_to_dict(m) for m in state.checkpointed],
        "config": config,
    }


def _approval(state: SessionState) -> dict[str, Any]:
    """The pending approval with every field the reference requires."""
    approval = PendingApproval.from_dict(state.pending_approval or {})
    out: dict[str, Any] = {
        "call_id": approval.call_id,
        "tool_name": approval.tool_name or "",
        "arguments": dict(approval.arguments),
        "command": approval.command,
        "tool_type": approval.tool_type,
        "messages": [message_to_dict(m) for m in state.messages()],
    }
    if approval.requester_id is not None:
        out["requester_id"] = approval.requester_id
    return out


def _some(**fields: Any) -> dict[str, Any]:
    """``fields`` without the absent ones (the reference omits an unset option)."""
    return {k: v for k, v in fields.items() if v is not None}


def _usage(usage: Mapping[str, Any] | None) -> dict[str, int] | None:
    if not usage:
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    total = int(usage.get("total_tokens") or prompt + completion)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _call(record: Mapping[str, Any]) -> dict[str, Any]:
    call = ToolCallRecord.of(record)
    return {"call_id": call.call_id, "tool_name": call.tool_name, "arguments": call.arguments}


def _session_start(data: Mapping[str, Any]) -> dict[str, Any]:
    start = SessionStartData.of(data)
    return _some(
        agent=start.agent,
        on_disconnect=start.on_disconnect or "pause",
        gateway=start.gateway,
        gateway_chat_id=start.gateway_chat_id,
    )


def _user_message(data: Mapping[str, Any]) -> dict[str, Any]:
    said = UserMessageData.of(data)
    return _some(content=said.content, sender_id=said.sender_id, sender_name=said.sender_name)


def _assistant(data: Mapping[str, Any]) -> dict[str, Any]:
    response = AssistantResponseData.of(data)
    calls = [_call(c) for c in response.tool_calls] or None
    return _some(
        agent=response.agent,
        content=response.content,
        tool_calls=calls,
        usage=_usage(response.usage),
    )


def _legacy_assistant(data: Mapping[str, Any]) -> dict[str, Any]:
    response = AssistantResponseData.of(data)
    return _some(agent=response.agent, content=response.content, usage=_usage(response.usage))


def _tool_result(data: Mapping[str, Any]) -> dict[str, Any]:
    result = ToolResultData.of(data)
    success = True if result.success is None else result.success  # older records: unknown
    return {"call_id": result.call_id, "result": {"success": success, "content": result.content}}


def _tools_skipped(data: Mapping[str, Any]) -> dict[str, Any]:
    skipped = ToolsSkippedData.of(data)
    return {"call_ids": list(skipped.call_ids), "reason": skipped.reason}


def _approval_required(data: Mapping[str, Any]) -> dict[str, Any]:
    asked = ApprovalRequiredData.of(data)
    return {"call_id": asked.call_id, "command": asked.command}


def _approval_decision(data: Mapping[str, Any]) -> dict[str, Any]:
    decided = ApprovalDecisionData.of(data)
    return {"call_id": decided.call_id, "decision": decided.decision or "deny"}


def _status_change(data: Mapping[str, Any]) -> dict[str, Any]:
    change = StatusChangeData.of(data)
    return {"from": change.old or "active", "to": change.new or "active"}


def _silent_message(data: Mapping[str, Any]) -> dict[str, Any]:
    chatter = SilentMessageData.of(data)
    return _some(
        content=chatter.content, sender_id=chatter.sender_id or "", sender_name=chatter.sender_name
    )


def _error(data: Mapping[str, Any]) -> dict[str, Any]:
    error = ErrorData.of(data)
    return {"code": error.code, "message": error.message}


def _session_end(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"reason": SessionEndData.of(data).reason or "completed"}


_SHAPES: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    EventType.SESSION_START.value: _session_start,
    EventType.SESSION_END.value: _session_end,
    EventType.USER_MESSAGE.value: _user_message,
    EventType.ASSISTANT_MESSAGE.value: _legacy_assistant,
    EventType.ASSISTANT_RESPONSE.value: _assistant,
    EventType.TOOL_CALL.value: _call,
    EventType.TOOL_RESULT.value: _tool_result,
    EventType.TOOLS_SKIPPED.value: _tools_skipped,
    EventType.APPROVAL_REQUIRED.value: _approval_required,
    EventType.APPROVAL_DECISION.value: _approval_decision,
    EventType.STATUS_CHANGE.value: _status_change,
    EventType.SILENT_MESSAGE.value: _silent_message,
    EventType.ERROR.value: _error,
}
"""Each kind the reference knows → its payload in the reference's shape (``digest`` §2.5)."""
