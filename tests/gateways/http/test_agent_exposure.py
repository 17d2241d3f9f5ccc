"""``GET /api/v1/agents/{name}`` serves neither files outside the agent nor expanded secrets."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
  description: uses ${{SECRET_DESC}}
  labels:
    owner: ${{SECRET_LABEL}}
spec:
  model:
    provider: fake
    name: gpt-4o
    base_url: https://user:${{SECRET_PASS}}@llm.example/v1
  system_prompt: {prompt}
"""


def write(root: Path) -> None:
    (root / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n")
    agents = root / ".duragent" / "agents"
    for name, prompt in (("bot", "PROMPT.md"), ("thief", "../../../../../../../../etc/passwd")):
        (agents / name).mkdir(parents=True)
        (agents / name / "agent.yaml").write_text(AGENT.format(name=name, prompt=prompt))
    (agents / "bot" / "PROMPT.md").write_text("be nice")


async def test_the_agents_api_never_serves_expanded_secrets_or_outside_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "SECRET_DESC": "desc-9f8e7d",
        "SECRET_LABEL": "lbl-6c5b4a",
        "SECRET_PASS": "pw-3e2d1c",
    }
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    write(tmp_path)
    runtime = Runtime(load_workspace(tmp_path), port=0)
    await runtime.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}") as client:
            listing = await client.get("/api/v1/agents")
            bot = await client.get("/api/v1/agents/bot")
            thief = await client.get("/api/v1/agents/thief")
    finally:
        await runtime.aclose()
    served = listing.text + bot.text
    assert not [v for v in secrets.values() if v in served]
    assert [a["name"] for a in listing.json()["agents"]] == ["bot"]
    detail = bot.json()
    assert detail["metadata"]["description"] == "uses ${SECRET_DESC}"
    assert detail["metadata"]["labels"] == {"owner": "${SECRET_LABEL}"}
    assert detail["spec"]["model"]["base_url"] == "https://***@llm.example/v1"
    assert detail["spec"]["system_prompt"] == "be nice"
    assert thief.status_code == 404
    assert "root:" not in thief.text
