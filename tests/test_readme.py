"""README.md is for users: the two set-up commands first, short, its samples true, links live.

It once was ~500 lines, 60 % benchmark logs and development history, with a ``doctor`` sample
that counted a warning it did not show. These checks keep it what a new user needs: the
commands CI runs, no history, a ``doctor`` sample that is what ``doctor`` prints, and links
that lead somewhere (the detail lives behind them).
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.testing.discord_objects import Person
from duragent.testing.fake_discord import FakeDiscord
from duragent.testing.fake_telegram import DEFAULT_TOKEN, FakeTelegram
from duragent.testing.serve_process import ServeProcess
from tests.cli.test_commands import run
from tests.polling import eventually

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


def _section(heading: str) -> str:
    return README.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]


def test_the_chat_platform_steps_name_the_workspace_they_serve() -> None:
    for heading in ("Run a Telegram bot", "Run a Discord bot"):
        section = _section(heading)
        serve = [line for line in section.splitlines() if "duragent serve" in line]
        assert serve, heading
        assert all(line.strip().endswith("-c examples/duragent.yaml`") for line in serve), serve
        assert "pip install" not in section, heading  # the SDKs come with the first command


def test_the_telegram_steps_followed_literally_give_a_workspace_doctor_passes(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", workspace, ignore=shutil.ignore_patterns("sessions"))
    config = workspace / "duragent.yaml"
    indented = r"^ *```yaml\n(.*?)^ *```"  # a block inside a numbered step
    snippet = re.findall(indented, _section("Run a Telegram bot"), flags=re.M | re.S)[0]
    config.write_text(config.read_text() + textwrap.dedent(snippet))

    result = CliRunner().invoke(
        app, ["doctor", "-c", str(config)], env={"TELEGRAM_BOT_TOKEN": DEFAULT_TOKEN}
    )

    assert result.exit_code == 0, result.output
    assert "✓ [gateway telegram] enabled" in result.output


def _follow_steps(
    heading: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_url: str, token: str
) -> tuple[Path, list[str]]:
    """README's steps under ``heading`` as written, on a copy of the example beside
    ``tmp_path``: its YAML block appended (plus the one line a test needs: the fake's
    ``base_url``), its token variable set; returns the config and README's serve command."""
    workspace = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", workspace, ignore=shutil.ignore_patterns("sessions"))
    config = workspace / "duragent.yaml"
    section = _section(heading)
    snippet = textwrap.dedent(re.findall(r"^ *```yaml\n(.*?)^ *```", section, flags=re.M | re.S)[0])
    config.write_text(config.read_text() + snippet + f"    base_url: {fake_url}\n")
    line = next(x for x in section.splitlines() if "duragent serve" in x)
    words = line.strip().strip("`").split()  # TELEGRAM_BOT_TOKEN=<the token> duragent …
    at = words.index("duragent")
    for assignment in words[:at]:
        monkeypatch.setenv(assignment.split("=", 1)[0], token)
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    monkeypatch.chdir(tmp_path)  # where `examples/duragent.yaml` is the copy
    return config, [sys.executable, "-m", "duragent", *words[at + 1 :]]


async def test_the_telegram_steps_followed_literally_give_a_bot_that_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeTelegram() as tg:
        config, command = _follow_steps(
            "Run a Telegram bot", tmp_path, monkeypatch, tg.url, tg.token
        )
        serve = ServeProcess(config, command=command)
        serve.start()
        try:
            await serve.wait_ready()
            tg.push_message(4242, "hello bot", user_id=4242)
            answered = await eventually(lambda: bool(tg.sent_messages(4242)))
        finally:
            serve.stop()
    assert answered, f"the bot never answered; see {config.parent}"
    assert "offline" in tg.sent_messages(4242)[0].lower()  # the example's offline model


async def test_the_discord_steps_followed_literally_give_a_bot_that_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeDiscord() as dc:
        config, command = _follow_steps(
            "Run a Discord bot", tmp_path, monkeypatch, dc.url, dc.token
        )
        serve = ServeProcess(config, command=command, gateway="discord")
        serve.start()
        try:
            await serve.wait_ready()
            await dc.push_message(1001, "hello bot", Person(77, "reader"))
            answered = await eventually(lambda: bool(dc.sent(1001)))
        finally:
            serve.stop()
    assert answered, f"the bot never answered; see {config.parent}"
    assert "offline" in str(dc.sent(1001)[0].get("content", "")).lower()
