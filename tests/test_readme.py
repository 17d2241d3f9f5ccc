"""README.md is for users: the two set-up commands first, short, its samples true, links live.

It once was ~500 lines, 60 % benchmark logs and development history, with a ``doctor`` sample
that counted a warning it did not show. These checks keep it what a new user needs: the
commands CI runs, no history, a ``doctor`` sample that is what ``doctor`` prints, and links
that lead somewhere (the detail lives behind them).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.test_commands import run

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLE_HOME = "/home/me/bot"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S)


def test_it_starts_with_the_two_set_up_commands_and_the_second_is_what_ci_runs() -> None:
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    head = README.split("\n\n")[:3]
    assert head[0] == "# duragent"
    assert head[1] == (
        "```sh\npython3 -m venv .venv && .venv/bin/pip install -e . && "
        ".venv/bin/duragent serve -c examples/duragent.yaml\n```"
    )
    assert head[2] == f"```sh\n{ci_command}\n```"


def test_it_is_short_and_keeps_development_history_out() -> None:
    assert len(README.splitlines()) <= 390  # 300 until several nodes, the year run, many people
    for history in (r"\bSession \d", r"the issue allows", r"DESIGN\.md", r"\bbefore, \d"):
        assert not re.search(history, README, flags=re.I), history


def test_it_shows_how_to_change_the_port() -> None:
    assert "serve -c examples/duragent.yaml --port 9000" in README
    assert "DURAGENT_PORT=9000" in README


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_relative_link_and_anchor_leads_somewhere() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        target, _, anchor = link.partition("#")
        path = ROOT / target if target else ROOT / "README.md"
        assert path.is_file(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
            assert anchor in {_slug(h) for h in headings}, link


def test_the_doctor_sample_is_what_doctor_prints(tmp_path: Path) -> None:
    sample = next(b for b in code_blocks(README) if b.startswith("$ cd ~/bot && duragent doctor"))
    shown = sample.splitlines()[1:]
    bot = tmp_path / "bot"
    assert run("init", str(bot), "--no-interactive")[0] == 0
    assert run("agent", "create", "helper", "-c", str(bot), "--no-interactive")[0] == 0
    agent = bot / ".duragent" / "agents" / "helper" / "agent.yaml"
    agent.write_text(
        agent.read_text().replace("max_tool_result_tokens: 8000", "max_tool_result_tokens: 0")
    )

    code, out = run("doctor", "-c", str(bot / "duragent.yaml"))

    assert code == 1
    assert out.replace(str(bot), SAMPLE_HOME).splitlines() == shown
    # the summary counts what the lines show
    assert shown[-1] == (
        f"{sum(line.startswith('✗') for line in shown)} error(s), "
        f"{sum(line.startswith('!') for line in shown)} warning(s)"
    )
