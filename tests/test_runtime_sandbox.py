"""``serve`` with a sandbox: a real turn's tools run confined; one that cannot run refuses."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from duragent.config import load_workspace
from duragent.lifecycle.services import ServiceStartError
from duragent.runtime import Runtime
from tests.conftest import AGENT_YAML
from tests.tools.sandbox_support import bwrap

__all__ = ["bwrap"]

BASH_AGENT = AGENT_YAML + "  tools:\n    - type: builtin\n      name: bash\n"


def bash_line(command: str) -> str:
    """A message the offline model answers with one bash call."""
    return "!call bash " + json.dumps({"command": command})


async def test_a_turns_bash_call_runs_in_the_configured_sandbox(
    tmp_path: Path, write_agent: Callable[..., Path], bwrap: str
) -> None:
    (tmp_path / "duragent.yaml").write_text("sandbox:\n  mode: bubblewrap\n")
    write_agent("alpha", BASH_AGENT.format(name="alpha"))
    runtime = Runtime(load_workspace(tmp_path), port=0)
    await runtime.start()
    try:
        other = await runtime.turns.start_session("alpha")
        await runtime.turns.run(other, "remember this")
        mine = await runtime.turns.start_session("alpha")
        events = tmp_path / ".duragent" / "sessions" / other / "events.jsonl"
        assert "remember this" in events.read_text()
        await runtime.turns.run(mine, bash_line(f"cat {events} || echo UNSEEN"))
    finally:
        await runtime.aclose()
    mine_events = (tmp_path / ".duragent" / "sessions" / mine / "events.jsonl").read_text()
    results = [
        e for e in map(json.loads, mine_events.splitlines()) if e.get("type") == "tool_result"
    ]
    assert len(results) == 1
    assert "UNSEEN" in json.dumps(results)
    assert "remember this" not in json.dumps(results)


async def test_serve_refuses_to_start_when_bwrap_is_missing(
    tmp_path: Path, write_agent: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "duragent.yaml").write_text("sandbox:\n  mode: bubblewrap\n")
    write_agent("alpha")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no bwrap on PATH
    runtime = Runtime(load_workspace(tmp_path), port=0)
    with pytest.raises(ServiceStartError) as caught:
        await runtime.start()
    assert caught.value.service == "sandbox"
    text = str(caught.value)
    assert f"{tmp_path / 'duragent.yaml'}: sandbox.mode: bwrap is not installed" in text
    assert "tools will not run unconfined" in text
    assert "apt-get install bubblewrap" in text
    assert runtime.http_port is None


async def test_serve_refuses_docker_mode_with_the_fix(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    (tmp_path / "duragent.yaml").write_text("sandbox:\n  mode: docker\n")
    write_agent("alpha")
    runtime = Runtime(load_workspace(tmp_path), port=0)
    with pytest.raises(ServiceStartError) as caught:
        await runtime.start()
    assert caught.value.service == "sandbox"
    assert "sandbox.mode docker is not supported" in str(caught.value)
    assert "set sandbox.mode to bubblewrap" in str(caught.value)
