"""``doctor`` shows each agent's summaries setting on the line after its tier's."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_commands import run
from tests.cli.test_doctor_budget import write


def lines_of(out: str, agent: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"✓ [agent {agent}] ")]


def test_doctor_shows_each_agents_summaries_setting_after_its_tier(tmp_path: Path) -> None:
    assert run("init", str(tmp_path), "--no-interactive")[0] == 0
    agents = tmp_path / ".duragent" / "agents"
    write(agents, "small", 4096)
    write(agents, "quiet", 8192, "  session:\n    context: {summaries: {enabled: false}}\n")
    write(
        agents,
        "tuned",
        32000,
        "  session:\n    context: {summaries: {threshold: 0.6, max_summary_tokens: 300}}\n",
    )

    _, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))

    small = lines_of(out, "small")
    tier = next(i for i, line in enumerate(small) if " tier 4–8K:" in line)
    assert small[tier + 1] == (
        "✓ [agent small] summaries on: from 70 % of the history budget, keep 20 % verbatim, "
        "≤ 409 tokens, extractive (the offline model writes none)"
    )
    assert "✓ [agent quiet] summaries off (old history is only dropped)" in out
    assert "summaries on: from 60 % of the history budget" in "\n".join(lines_of(out, "tuned"))
    assert "≤ 300 tokens" in "\n".join(lines_of(out, "tuned"))
