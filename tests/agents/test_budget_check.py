"""At load, an agent whose window leaves too little room for history is reported, not served.

The check (``session.agent_budget.budget_check``) is passed to ``load_catalog``; a broken
budget marks only that agent broken, with file, field, numbers and fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.agents import load_catalog
from duragent.config import load_workspace
from duragent.context.budget import ContextOverflowError
from duragent.runtime import Runtime
from duragent.turns.agent_budget import agent_budget, budget_check


def write(root: Path, name: str, model: str) -> Path:
    folder = root / ".duragent" / "agents" / name
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n"
        f"  name: {name}\nspec:\n  model:\n    provider: offline\n    name: m\n{model}"
    )
    return folder


def test_a_4096_window_without_max_output_tokens_loads_with_room_for_history(
    tmp_path: Path,
) -> None:
    write(tmp_path, "small", "    max_input_tokens: 4096\n")
    catalog = load_catalog(tmp_path / ".duragent" / "agents", check=budget_check(tmp_path))
    assert catalog.broken == {}
    split = agent_budget(catalog.get("small"), tmp_path)
    assert (split.window, split.reserve, split.safety) == (4096, 1024, 409)
    assert split.history >= split.minimum == 512


def test_a_reserve_that_starves_history_marks_only_that_agent_broken(tmp_path: Path) -> None:
    write(tmp_path, "good", "    max_input_tokens: 8192\n")
    bad = write(tmp_path, "bad", "    max_input_tokens: 4096\n    max_output_tokens: 3600\n")

    catalog = load_catalog(tmp_path / ".duragent" / "agents", check=budget_check(tmp_path))

    assert catalog.names() == ["good"]
    error = catalog.broken[bad]
    text = error.render()
    assert error.file == bad / "agent.yaml"
    assert error.field == "spec.model.max_output_tokens"
    assert "reply 3600" in text
    assert "window 4096" in text
    assert error.fix is not None
    assert "lower spec.model.max_output_tokens to at most" in error.fix


def test_a_window_too_small_for_the_prompt_names_max_input_tokens(tmp_path: Path) -> None:
    bad = write(tmp_path, "tiny", "    max_input_tokens: 300\n")

    catalog = load_catalog(tmp_path / ".duragent" / "agents", check=budget_check(tmp_path))

    error = catalog.broken[bad]
    assert error.field == "spec.model.max_input_tokens"
    assert error.fix is not None
    assert "raise spec.model.max_input_tokens" in error.fix


def test_a_prompt_too_long_at_run_time_names_the_fields_to_change() -> None:
    message = str(ContextOverflowError(needed=5000, limit=2663))
    assert "spec.model.max_output_tokens" in message
    assert "spec.model.max_input_tokens" in message
    assert "memory" in message


@pytest.mark.parametrize("window", [8192, 16_384, 128_000])
def test_windows_from_8k_up_load_with_the_default_reserve(tmp_path: Path, window: int) -> None:
    write(tmp_path, "a", f"    max_input_tokens: {window}\n")
    catalog = load_catalog(tmp_path / ".duragent" / "agents", check=budget_check(tmp_path))
    assert catalog.broken == {}


def test_the_runtime_serves_the_good_agents_and_reports_a_starved_one(tmp_path: Path) -> None:
    write(tmp_path, "good", "    max_input_tokens: 4096\n")
    bad = write(tmp_path, "bad", "    max_input_tokens: 4096\n    max_output_tokens: 3600\n")

    catalog = Runtime(load_workspace(tmp_path), port=0).reload_agents()

    assert catalog.names() == ["good"]
    assert catalog.broken[bad].field == "spec.model.max_output_tokens"
