from __future__ import annotations

import json
from pathlib import Path

import pytest

from duragent.core.messages import Message, ToolCall
from duragent.core.snapshot import SessionSnapshot, SessionStatus
from duragent.store.snapshot_file import SnapshotCorruptError, SnapshotFile
from duragent.store.yaml_emit import dump_yaml


def snapshot(**overrides: object) -> SessionSnapshot:
    base: dict[str, object] = {
        "session_id": "session_01",
        "agent": "assistant",
        "created_at": "2026-11-22T07:00:00.000Z",
        "updated_at": "2026-11-22T07:05:00.000Z",
        "last_event_seq": 12,
        "checkpoint_seq": 10,
        "conversation": [
            Message.user("hello: 'quoted' \"x\" # not a comment"),
            Message.assistant(None, (ToolCall(id="c1", name="bash", arguments='{"a":1}'),)),
            Message.tool("c1", "ok\nmultiline ✓"),
            Message.assistant("done"),
        ],
        "gateway": "telegram",
        "gateway_chat_id": "42",
        "pending_approval": {"call_id": "c9", "command": "rm x"},
        "recent_platform_ids": ["u1", "u2"],
    }
    base.update(overrides)
    return SessionSnapshot(**base)  # type: ignore[arg-type]


def test_a_snapshot_round_trips_through_state_yaml(tmp_path: Path) -> None:
    file = SnapshotFile(tmp_path)
    file.write(snapshot())
    loaded = file.read()
    assert loaded is not None
    original = snapshot()
    assert loaded.to_dict() == original.to_dict()
    assert (tmp_path / "state.yaml").read_text().startswith("schema_version: 3\n")
    assert not list(tmp_path.glob("*.tmp"))


def test_a_missing_snapshot_reads_as_none(tmp_path: Path) -> None:
    assert SnapshotFile(tmp_path).read() is None


def test_the_references_state_json_is_read(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(
        json.dumps(
            {
                "schema_version": "2",
                "session_id": "session_X",
                "agent": "bot",
                "status": "paused",
                "created_at": "2026-01-01T00:00:00Z",
                "snapshot_at": "2026-01-02T00:00:00Z",
                "last_event_seq": 30,
                "checkpoint_seq": 20,
                "conversation": [{"role": "user", "content": "hi"}],
                "config": {"on_disconnect": "continue", "gateway": "discord"},
            }
        )
    )
    loaded = SnapshotFile(tmp_path).read()
    assert loaded is not None
    assert loaded.status is SessionStatus.PAUSED
    assert loaded.replay_from_seq == 20
    assert loaded.on_disconnect == "continue"
    assert loaded.updated_at == "2026-01-02T00:00:00Z"
    assert [m.text for m in loaded.conversation] == ["hi"]


def test_schema_version_1_replays_from_the_last_event(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(
        json.dumps(
            {
                "schema_version": "1",
                "session_id": "s",
                "agent": "a",
                "created_at": "t",
                "last_event_seq": 30,
            }
        )
    )
    loaded = SnapshotFile(tmp_path).read()
    assert loaded is not None
    assert loaded.replay_from_seq == 30


@pytest.mark.parametrize(
    "content",
    [
        "session_id: [unclosed\n",
        "- just\n- a list\n",
        "schema_version: 99\nsession_id: s\nagent: a\ncreated_at: t\n",
        "schema_version: 3\nagent: a\ncreated_at: t\n",
        "schema_version: 3\nsession_id: s\nagent: a\ncreated_at: t\nstatus: exploded\n",
    ],
    ids=["syntax", "not-a-mapping", "future-version", "no-id", "bad-status"],
)
def test_a_corrupt_snapshot_raises_with_the_path(tmp_path: Path, content: str) -> None:
    (tmp_path / "state.yaml").write_text(content)
    with pytest.raises(SnapshotCorruptError) as info:
        SnapshotFile(tmp_path).read()
    assert str(tmp_path / "state.yaml") in str(info.value)


def test_writing_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    file = SnapshotFile(tmp_path)
    for seq in range(5):
        file.write(snapshot(last_event_seq=seq))
    loaded = file.read()
    assert loaded is not None
    assert loaded.last_event_seq == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.yaml"]


def test_rendering_reuses_message_lines_and_matches_a_full_render(tmp_path: Path) -> None:
    messages = [Message.user("one"), Message.assistant("two\nlines")]
    snapshots = SnapshotFile(tmp_path)
    first = SessionSnapshot(
        session_id="s", agent="a", created_at="t", updated_at="t", conversation=messages
    )
    assert snapshots.render(first) == dump_yaml(first.to_dict())
    later = SessionSnapshot(
        session_id="s",
        agent="a",
        created_at="t",
        updated_at="t",
        conversation=[messages[1], Message.user("three")],
    )
    assert snapshots.render(later) == dump_yaml(later.to_dict())
    empty = SessionSnapshot(session_id="s", agent="a", created_at="t", updated_at="t")
    assert snapshots.render(empty) == dump_yaml(empty.to_dict())
    snapshots.write(later)
    assert snapshots.last_size == len(snapshots.path.read_bytes())
    loaded = snapshots.read()
    assert loaded is not None
    assert [m.content for m in loaded.conversation] == ["two\nlines", "three"]
