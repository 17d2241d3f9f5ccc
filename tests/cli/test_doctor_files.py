"""``doctor`` checks policy files, schedule files, gateway programs and the sandbox."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from duragent.cli import doctor_files
from duragent.cli.main import app
from duragent.tools.guardian import FALLBACK_FIX, Containment
from tests.tools.sandbox_support import bwrap

__all__ = ["bwrap"]

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
spec:
  model:
    provider: offline
    name: duragent-offline
"""


def workspace(root: Path, config: str = "") -> Path:
    (root / "duragent.yaml").write_text(textwrap.dedent(config))
    folder = root / ".duragent" / "agents" / "helper"
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(AGENT)
    return root / "duragent.yaml"


def doctor(config: Path, **env: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env=env or None)
    return result.exit_code, result.output.splitlines()


def line_with(lines: list[str], text: str) -> str:
    found = [line for line in lines if text in line]
    assert found, "\n".join(lines)
    return found[0]


def test_a_policy_mode_yolo_is_an_error_with_file_line_field_and_fix(tmp_path: Path) -> None:
    config = workspace(tmp_path)
    policy = tmp_path / ".duragent" / "agents" / "helper" / "policy.yaml"
    policy.write_text("apiVersion: duragent/v1alpha1\nkind: Policy\nmode: yolo\n")
    code, lines = doctor(config)
    assert code == 1
    line = line_with(lines, "[policy]")
    assert line.startswith(
        f"✗ [policy] {policy}:3: mode: invalid value (got 'yolo'; allowed: dangerous, ask, "
        "restrict). Fix: ask (approve"
    )


def test_valid_policy_files_are_listed_and_a_typo_is_a_warning(tmp_path: Path) -> None:
    config = workspace(tmp_path)
    (tmp_path / ".duragent" / "policy.yaml").write_text(
        "mode: ask\nallow: ['bash:ls *']\nnotify:\n  enabled: true\n  webhok: https://x\n"
    )
    code, lines = doctor(config)
    assert code == 0, lines
    ok = line_with(lines, "[policy]")  # listed because it turns notifications on
    assert ok == f"✓ [policy] {tmp_path / '.duragent' / 'policy.yaml'}: mode ask, 1 allow, " + (
        "0 deny, notify on (log)"
    )
    warning = line_with(lines, "notify.webhok")
    assert warning.startswith(
        f"! [policy] {tmp_path / '.duragent' / 'policy.yaml'}:5: notify.webhok: unknown field"
    )
    assert "allowed: enabled, patterns, deliveries" in warning


def write_schedule(root: Path, name: str, text: str) -> Path:
    path = root / ".duragent" / "schedules" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


SCHEDULE = """\
id: {id}
agent: {agent}
schedule:
  cron: {{expr: "{expr}"}}
payload:
  message: {{message: hello}}
"""


def test_schedule_files_are_parsed_with_the_schedulers_parser(tmp_path: Path) -> None:
    config = workspace(tmp_path)
    good = write_schedule(
        tmp_path, "daily.yaml", SCHEDULE.format(id="daily", agent="helper", expr="0 9 * * *")
    )
    bad_cron = write_schedule(
        tmp_path, "broken.yaml", SCHEDULE.format(id="broken", agent="helper", expr="every day")
    )
    renamed = write_schedule(
        tmp_path, "copy.yaml", SCHEDULE.format(id="daily", agent="helper", expr="0 9 * * *")
    )
    orphan = write_schedule(
        tmp_path, "orphan.yaml", SCHEDULE.format(id="orphan", agent="ghost", expr="0 9 * * *")
    )
    torn = write_schedule(tmp_path, "torn.yaml", "id: torn\nschedule: [\n")
    code, lines = doctor(config)
    assert code == 1
    assert f"✓ [schedules] {good}: active, agent helper, cron '0 9 * * *'" in lines
    assert line_with(lines, str(bad_cron)).startswith(
        f"✗ [schedules] {bad_cron}: schedule.cron.expr:"
    )
    assert line_with(lines, str(renamed)).startswith(
        f"✗ [schedules] {renamed}: id: does not match the file name (got 'daily')"
    )
    assert "Fix: set id: copy or rename the file" in line_with(lines, str(renamed))
    orphan_line = line_with(lines, str(orphan))
    assert orphan_line.startswith(f"✗ [schedules] {orphan}: agent: names agent 'ghost'")
    assert "Fix: use one of: helper" in orphan_line
    assert line_with(lines, str(torn)).startswith(f"✗ [schedules] {torn}: YAML syntax error")


def test_an_external_gateway_program_that_is_not_executable_is_named_with_field_and_fix(
    tmp_path: Path,
) -> None:
    program = tmp_path / "gateways" / "slack"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o644)
    config = workspace(
        tmp_path, "gateways:\n  external:\n    - {name: slack, command: gateways/slack}\n"
    )
    code, lines = doctor(config)
    assert code == 1
    line = line_with(lines, "[gateway slack]")
    assert line == (
        f"✗ [gateway slack] {config}: gateways.external[0].command: gateway 'slack': "
        f"{program} is not executable"
    )
    assert lines[lines.index(line) + 1].strip().startswith(f"fix: chmod +x {program}")


def test_a_working_bubblewrap_sandbox_is_reported_ok(tmp_path: Path, bwrap: str) -> None:
    config = workspace(tmp_path, "sandbox:\n  mode: bubblewrap\n  network: true\n")
    code, lines = doctor(config)
    assert code == 0, lines
    assert "✓ [sandbox] bubblewrap works here (network on)" in lines


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("bubblewrap", "sandbox.mode: bwrap is not installed: install bubblewrap"),
        ("docker", "sandbox.mode: sandbox.mode docker is not supported"),
    ],
)
def test_a_sandbox_that_cannot_run_is_an_error_naming_the_field_and_fix(
    tmp_path: Path, mode: str, says: str
) -> None:
    config = workspace(tmp_path, f"sandbox:\n  mode: {mode}\n")
    code, lines = doctor(config, PATH=str(tmp_path / "no-bin"))
    assert code == 1
    line = line_with(lines, "[sandbox]")
    assert line.startswith(f"✗ [sandbox] {config}: {says}")
    assert ". Fix: " in line
    assert os.environ["PATH"] != str(tmp_path / "no-bin")  # CliRunner restored it


def test_trust_mode_is_a_warning_naming_what_tools_can_do_and_the_fix(tmp_path: Path) -> None:
    config = workspace(tmp_path)  # sandbox.mode defaults to trust
    _, lines = doctor(config)
    line = line_with(lines, "[sandbox]")
    assert line == (
        "! [sandbox] sandbox.mode is trust: tools (bash, CLI tools, background jobs) run with "
        "the owner's rights for whoever gets the agent to run one (a member approving their "
        "own request too), so a command can read the keys and tokens (.env, duragent.yaml), "
        "change the agents' files (agent.yaml, prompts, policy) and call the HTTP API on "
        "loopback"
    )
    assert lines[lines.index(line) + 1].strip() == (
        f"fix: set sandbox.mode: bubblewrap in {config} and install bubblewrap "
        "(Debian/Ubuntu: apt-get install bubblewrap)"
    )


def test_a_sandbox_with_network_and_no_api_token_is_a_warning(tmp_path: Path, bwrap: str) -> None:
    """Found in review: a tool's command on loopback is the operator when no token is set."""
    config = workspace(tmp_path, "sandbox:\n  mode: bubblewrap\n  network: true\n")
    _, lines = doctor(config)
    line = line_with(lines, "api_token is not set")
    assert line.startswith("! [sandbox] sandbox.network is on and server.api_token is not set")
    tokened = tmp_path / "tokened"
    tokened.mkdir()
    config = workspace(
        tokened,
        "server:\n  api_token: t0ken-t0ken-t0ken-t0ken\n"
        "sandbox:\n  mode: bubblewrap\n  network: true\n",
    )
    _, lines = doctor(config)
    assert not any("api_token is not set" in line for line in lines)


def test_doctor_says_what_keeps_tool_processes_from_outliving_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace(tmp_path)
    _, lines = doctor(config)
    assert line_with(lines, "[tool processes]") == (
        "✓ [tool processes] a subreaper guardian per command (prctl PR_SET_CHILD_SUBREAPER): "
        "what it starts, detached or not, ends with it and with the server"
    )
    # where the guardian cannot run, the fallback is a warning with its fix
    fallback = Containment(False, "process groups and a reaper (not Linux with /proc): …")
    monkeypatch.setattr(doctor_files, "containment", lambda: fallback)
    _, lines = doctor(config)
    line = line_with(lines, "[tool processes]")
    assert line == "! [tool processes] process groups and a reaper (not Linux with /proc): …"
    assert lines[lines.index(line) + 1].strip() == f"fix: {FALLBACK_FIX}"
