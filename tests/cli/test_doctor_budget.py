"""``doctor`` shows how each agent's window is split and names one that leaves no room."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_commands import run

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
spec:
  model:
    provider: offline
    name: duragent-offline
    max_input_tokens: {window}
{extra}"""


def write(agents: Path, name: str, window: int, extra: str = "") -> None:
    (agents / name).mkdir()
    (agents / name / "agent.yaml").write_text(AGENT.format(name=name, window=window, extra=extra))


def test_doctor_shows_each_agents_budget_split_and_names_a_window_too_small(
    tmp_path: Path,
) -> None:
    assert run("init", str(tmp_path), "--no-interactive")[0] == 0
    agents = tmp_path / ".duragent" / "agents"
    write(agents, "small", 4096)
    write(agents, "starved", 4096, "    max_output_tokens: 3500\n")

    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))

    assert code == 1
    split = next(line for line in out.splitlines() if "[agent small] budget:" in line)
    assert "window 4096 = reply 1024 + safety 409 + system prompt " in split
    history = int(split.rsplit("history ", 1)[1])
    assert history >= 512
    starved = next(line for line in out.splitlines() if "[agent starved]" in line)
    assert starved.startswith("✗")
    assert str(agents / "starved" / "agent.yaml") in starved
    assert "spec.model.max_output_tokens" in starved
    assert "reply 3500" in starved
    assert "lower spec.model.max_output_tokens to at most" in out


def test_agent_list_marks_an_agent_whose_window_leaves_no_room_broken(tmp_path: Path) -> None:
    assert run("init", str(tmp_path), "--no-interactive")[0] == 0
    agents = tmp_path / ".duragent" / "agents"
    write(agents, "small", 4096)
    write(agents, "starved", 4096, "    max_output_tokens: 3500\n")

    _, out = run("agent", "list", "-c", str(tmp_path / "duragent.yaml"))

    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "BROKEN" not in lines["small"]
    assert "BROKEN" in lines["starved"]
    assert "spec.model.max_output_tokens" in lines["starved"]
