"""Shared fixtures: temporary workspaces and a way to write agent folders."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duragent.core.clock import use_time_source

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


class Calendar:
    """The process's calendar (``duragent.core.clock``), moved by hand: a test's days pass in
    no time. Starts at 2026-01-01 00:00 UTC."""

    DAY = 86_400.0

    def __init__(self) -> None:
        self.seconds = datetime(2026, 1, 1, tzinfo=UTC).timestamp()

    def advance(self, *, days: float = 0, seconds: float = 0) -> None:
        """Move forward (event stamps, ``updated_at`` and TTL sweeps read the new time)."""
        self.seconds += days * self.DAY + seconds


@pytest.fixture
def calendar() -> Iterator[Calendar]:
    """The process's calendar set to a ``Calendar`` for the test, the wall clock after it."""
    moved = Calendar()
    use_time_source(lambda: moved.seconds)
    try:
        yield moved
    finally:
        use_time_source(time.time)
