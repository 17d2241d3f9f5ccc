"""Shared fixtures: temporary workspaces and a way to write agent folders."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

AGENT_YAML = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
spec:
  model:
    provider: offline
    name: duragent-offline
"""


@pytest.fixture
def write_agent(tmp_path: Path) -> Callable[..., Path]:
    """Write ``<tmp>/.duragent/agents/<name>/agent.yaml`` (+ extra files); return the folder."""

    def write(name: str = "assistant", yaml_text: str | None = None, **files: str) -> Path:
        folder = tmp_path / ".duragent" / "agents" / name
        folder.mkdir(parents=True, exist_ok=True)
        text = AGENT_YAML.format(name=name) if yaml_text is None else textwrap.dedent(yaml_text)
        (folder / "agent.yaml").write_text(text, encoding="utf-8")
        for rel, content in files.items():
            path = folder / rel.replace("__", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        return folder

    return write


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests run only when asked for (``-m slow``), as the marker says."""
    if "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
