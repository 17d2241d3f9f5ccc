"""Window tiers (issue 20 item 6): small windows get defaults that fit them, large ones the seeds'.

Also: a reply reserve that takes the whole window is refused at load with file, field and fix,
and ``doctor`` shows each agent's tier.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.agents import load_catalog
from duragent.context.budget import BudgetSettings
from duragent.context.tiers import TIERS, compact_tools, tier_for
from duragent.context.tokens import counter_for_model
from duragent.core.messages import ToolDefinition
from duragent.turns.agent_budget import budget_check
from tests.cli.test_commands import run


@pytest.mark.parametrize(
    ("window", "tier"),
    [
        (1_024, "2–4K"),
        (2_048, "2–4K"),
        (3_999, "2–4K"),
        (4_096, "4–8K"),
        (8_000, "8–32K"),
        (16_384, "8–32K"),
        (31_999, "8–32K"),
        (32_000, "32K+"),
        (200_000, "32K+"),
    ],
)
def test_the_window_picks_the_tier(window: int, tier: str) -> None:
    assert tier_for(window).label == tier


def test_every_tier_leaves_a_tool_result_well_inside_one_request() -> None:
    for window in (2_048, 4_096, 8_192, 16_384, 32_000, 128_000):
        budget = BudgetSettings.for_model("gpt-4o", max_input_tokens=window, prune=True)
        assert budget.max_tool_result_tokens <= budget.limit * 0.35
        assert budget.prune is not None
        assert budget.prune.protect + budget.prune.minimum <= budget.limit
    # from 32K up an agent keeps the cap it always had, and large budgets get the seed's numbers
    assert BudgetSettings.for_model("gpt-4o").max_tool_result_tokens == 8_000
    big = BudgetSettings.for_model("gpt-5", max_history_tokens=0, prune=True)  # 400K
    assert big.prune is not None
    assert (big.prune.protect, big.prune.minimum) == (40_000, 20_000)


def test_every_tiers_protected_span_and_one_step_fit_between_low_water_and_trigger() -> None:
    """The outputs a request still carries whole (the protected span, and up to one step of
    pruning more) never pass the summaries trigger on their own: at 32K they were 40 % + 10 %
    of the history against a 70 % trigger and a 25 % low-water mark, and tool-heavy chats
    summarised every 2–3 turns (``specs/202612051200.summary-cadence.md``)."""
    for tier in TIERS:
        room = tier.summary_threshold - tier.summary_keep_recent
        assert tier.prune_protect_share + tier.prune_minimum_share <= room + 1e-9, tier.name


def test_small_tiers_send_a_compact_prompt_and_large_ones_the_full_one() -> None:
    assert [t.full_prompt for t in TIERS] == [False, False, True, True]
    assert not BudgetSettings.for_model("gpt-4o", max_input_tokens=4096).full_prompt
    assert BudgetSettings.for_model("gpt-4o", max_input_tokens=4096, full_prompt=True).full_prompt


def test_summary_defaults_grow_with_the_window_for_the_summaries_tier() -> None:
    thresholds = [t.summary_threshold for t in TIERS]
    lengths = [t.summary_tokens for t in TIERS]
    assert thresholds == sorted(thresholds)
    assert all(0.5 < x < 1 for x in thresholds)
    assert lengths == sorted(lengths)


def test_compact_tool_definitions_keep_every_name_type_and_required_field() -> None:
    tool = ToolDefinition(
        name="note",
        description="Write a note. It is kept for later sessions and can be long.",
        parameters={
            "type": "object",
            "description": "arguments",
            "properties": {
                "description": {"type": "string", "description": "what the note says"},
                "tags": {"type": "array", "items": {"type": "string", "description": "a tag"}},
            },
            "required": ["description"],
        },
    )
    (small,) = compact_tools([tool])
    counter = counter_for_model("gpt-4o")
    assert small.description == "Write a note."
    assert small.parameters == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["description"],
    }
    assert counter.count_tools([small]) < counter.count_tools([tool])


def write(root: Path, name: str, model: str) -> Path:
    folder = root / ".duragent" / "agents" / name
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n"
        f"  name: {name}\nspec:\n  model:\n    provider: offline\n    name: m\n{model}"
    )
    return folder


def test_a_reply_reserve_as_large_as_the_window_is_refused_with_file_field_and_fix(
    tmp_path: Path,
) -> None:
    bad = write(tmp_path, "bad", "    max_input_tokens: 4096\n    max_output_tokens: 4096\n")
    write(tmp_path, "good", "    max_input_tokens: 4096\n")

    catalog = load_catalog(tmp_path / ".duragent" / "agents", check=budget_check(tmp_path))

    assert catalog.names() == ["good"]
    error = catalog.broken[bad]
    assert error.file == bad / "agent.yaml"
    assert error.field == "spec.model.max_output_tokens"
    assert "reply reserve (4096 tokens) is not smaller than the context window (4096" in str(
        error.render()
    )
    assert error.fix is not None
    assert "the 4–8K tier's default is 1024" in error.fix


def test_doctor_shows_each_agents_tier(tmp_path: Path) -> None:
    assert run("init", str(tmp_path), "--no-interactive")[0] == 0
    write(tmp_path, "small", "    max_input_tokens: 4096\n")

    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))

    assert code == 0, out
    line = next(x for x in out.splitlines() if x.startswith("✓ [agent small] tier"))
    assert line == (
        "✓ [agent small] tier 4–8K: tool results ≤ 798, prune outputs beyond 532 "
        "(steps of 266), compact prompt"
    )
