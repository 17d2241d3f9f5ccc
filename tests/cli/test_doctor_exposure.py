"""``doctor`` names prompt files outside an agent's folder and secrets in served fields."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_commands import run

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
  labels:
    api_key: {label}
spec:
  model:
    provider: offline
    name: duragent-offline
    base_url: http://admin:hunter2@127.0.0.1:9/v1
  system_prompt: {prompt}
"""


def test_doctor_reports_an_outside_prompt_and_warns_about_served_secrets(tmp_path: Path) -> None:
    assert run("init", str(tmp_path), "--no-interactive")[0] == 0
    agents = tmp_path / ".duragent" / "agents"
    for name, prompt in (("leaky", "PROMPT.md"), ("thief", "../../../../../../../etc/passwd")):
        (agents / name).mkdir()
        text = AGENT.format(name=name, label="sk-abcdefghijklmnopqrstuvwx", prompt=prompt)
        (agents / name / "agent.yaml").write_text(text)
    (agents / "leaky" / "PROMPT.md").write_text("hi")

    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))

    assert code == 1
    assert "outside the agent's folder" in out
    assert "metadata.labels.api_key" in out
    assert "looks like a secret" in out
    assert "a URL with credentials" in out
    assert "hunter2" not in out
