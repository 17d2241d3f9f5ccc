"""A state.yaml or events.jsonl line nested tens of thousands deep is a corrupt file, not a
crash: libyaml's composer would SIGSEGV and ``json`` raise RecursionError. Each case runs in a
child process so that a crash fails the test instead of killing the runner."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

DEEP = "[" * 50_000 + "]" * 50_000


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )


def test_a_deeply_nested_state_yaml_is_reported_corrupt(tmp_path: Path) -> None:
    (tmp_path / "state.yaml").write_text(f"schema_version: 1\nmeta: {DEEP}\nconversation: []\n")
    done = run(
        f"""
        from pathlib import Path
        from duragent.store.snapshot_file import SnapshotFile, SnapshotCorruptError, read_header
        try:
            read_header(Path({str(tmp_path)!r}))
        except SnapshotCorruptError as exc:
            print("header corrupt:", exc)
        try:
            SnapshotFile(Path({str(tmp_path)!r})).read()
        except SnapshotCorruptError as exc:
            print("corrupt:", exc)
        """
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-1500:])
    assert "header corrupt:" in done.stdout
    assert "nested more than" in done.stdout


def test_a_deeply_nested_event_line_is_a_value_error() -> None:
    done = run(
        f"""
        from duragent.core.events import Event
        try:
            Event.from_json('{{"seq": 1, "type": "x", "a": {DEEP}}}')
        except ValueError as exc:
            print("refused:", exc)
        """
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-1500:])
    assert "nested more than" in done.stdout
