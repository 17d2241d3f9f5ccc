"""``duragent session restore`` brings a quarantined session back, without a server."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from tests.gateways.http.api_fixtures import served
from tests.store.failing_ops import FailingFileOps

runner = CliRunner()


async def _quarantined_session(sessions: Path) -> str:
    reg = SessionRegistry(SessionStore(sessions), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        await reg.handle(sid).add_user_message(content="keep me")
    finally:
        await reg.aclose()
    reg.store.quarantine(sid, "an operator test")
    return sid


async def test_restore_moves_a_quarantined_session_back_and_keeps_the_reason(
    tmp_path: Path,
) -> None:
    assert runner.invoke(app, ["init", str(tmp_path), "--no-interactive"]).exit_code == 0
    sessions = tmp_path / ".duragent" / "sessions"
    sid = await _quarantined_session(sessions)

    result = runner.invoke(app, ["session", "restore", sid, "-c", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"restored {sid}" in result.output
    assert "keep me" in (sessions / sid / "events.jsonl").read_text()
    assert "an operator test" in (sessions / sid / "REASON.restored.txt").read_text()
    assert not (sessions / "_quarantine" / sid).exists()


def test_restoring_a_session_that_is_not_quarantined_says_which_are(tmp_path: Path) -> None:
    assert runner.invoke(app, ["init", str(tmp_path), "--no-interactive"]).exit_code == 0
    result = runner.invoke(app, ["session", "restore", "session_nope", "-c", str(tmp_path)])
    assert result.exit_code == 1
    assert "is not quarantined" in result.output
    assert "quarantined: none" in result.output


async def test_session_list_shows_a_quarantined_session_with_its_reason(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        await s.runtime.registry.stop(sid)
        s.runtime.registry.store.quarantine(sid, "an operator test")
        url = f"http://127.0.0.1:{s.runtime.http_port}"
        args = ["session", "list", "-c", str(tmp_path), "-s", url]
        result = await asyncio.to_thread(runner.invoke, app, args)  # the server keeps serving
    assert result.exit_code == 0, result.output
    assert "quarantined" in result.output
    assert "an operator test" in result.output
    assert "duragent session restore ID" in result.output


async def test_session_list_shows_an_unreadable_session_as_unavailable_with_its_cause(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        store = s.runtime.registry.store
        assert isinstance(store, SessionStore)
        ops = FailingFileOps()
        store.ops = ops
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        await s.runtime.registry.stop(sid)
        ops.unreadable["state.yaml"] = errno.EACCES
        url = f"http://127.0.0.1:{s.runtime.http_port}"
        args = ["session", "list", "-c", str(tmp_path), "-s", url]
        result = await asyncio.to_thread(runner.invoke, app, args)
    assert result.exit_code == 0, result.output
    assert f"{sid} unavailable: storage error while reading" in result.output
    assert "Permission denied" in result.output
    assert "no restore is needed" in result.output
