"""``duragent session export ID --format reference`` and what ``doctor`` says of a migration."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.store import SessionStore
from tests.reference_sessions import PENDING_CALL, SESSION_ID, reference_sessions

runner = CliRunner()


def _workspace(tmp_path: Path) -> Path:
    assert runner.invoke(app, ["init", str(tmp_path), "--no-interactive"]).exit_code == 0
    sessions = tmp_path / ".duragent" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    reference_sessions(sessions)
    return sessions


def test_export_writes_the_session_in_the_references_layout(tmp_path: Path) -> None:
    sessions = _workspace(tmp_path)
    SessionStore(sessions).open()  # a first start: migrated
    out = tmp_path / "back"
    args = ["session", "export", SESSION_ID, "--format", "reference", "-o", str(out)]
    result = runner.invoke(app, [*args, "-c", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"exported {SESSION_ID} to {out / SESSION_ID}" in result.output
    state = json.loads((out / SESSION_ID / "state.json").read_text())
    assert state["schema_version"] == "2"
    assert state["config"]["pending_approval"]["call_id"] == PENDING_CALL
    assert (out / SESSION_ID / "events.jsonl").read_text().count("\n") == 4
    assert (out / SESSION_ID / "events.archive.jsonl").read_text().count("\n") == 7
    assert (sessions / SESSION_ID / "state.json.migrated").exists()  # the store untouched


def test_export_refuses_an_unknown_session_and_an_unknown_format(tmp_path: Path) -> None:
    _workspace(tmp_path)
    missing = ["session", "export", "session_nope", "--format", "reference", "-c", str(tmp_path)]
    result = runner.invoke(app, missing)
    assert result.exit_code == 1
    assert "no session session_nope" in result.output
    unknown = ["session", "export", SESSION_ID, "--format", "yaml", "-c", str(tmp_path)]
    assert runner.invoke(app, unknown).exit_code == 2


def test_doctor_reports_sessions_to_migrate_then_the_migrated_ones(tmp_path: Path) -> None:
    sessions = _workspace(tmp_path)
    before = runner.invoke(app, ["doctor", "-c", str(tmp_path)]).output
    assert "[migration] 1 session(s) still in the reference's state.json" in before
    SessionStore(sessions).open()
    after = runner.invoke(app, ["doctor", "-c", str(tmp_path)]).output
    line = next(x for x in after.splitlines() if "[migration]" in x)
    assert "1 session(s) migrated from the reference's state.json to state.yaml" in line
    assert f"{sessions}/<id>/state.json.migrated" in line
