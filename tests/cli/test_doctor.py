"""``doctor`` names every independent problem of the workspace in one run (issue 39).

It used to report in rounds: an unset ``${VAR}`` hid every other error, then the type errors
hid the unknown fields. Each problem is now one line with its file, line, field, the value
found and a fix in plain words.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from typer.testing import CliRunner

from duragent.agents.loader import KNOWN_BUILTIN_TOOLS
from duragent.agents.session_spec import SessionSpec
from duragent.cli.main import app

UNSET = "DURAGENT_DOCTOR_TEST_UNSET"
"""A variable no test environment sets (the runner is given an environment without it)."""


def agent_yaml(name: str, spec: str = "") -> str:
    return (
        f"apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: {name}\nspec:\n"
        f"  model:\n    provider: offline\n    name: duragent-offline\n{spec}"
    )


def workspace(root: Path, config: str, **agents: str) -> Path:
    (root / "duragent.yaml").write_text(textwrap.dedent(config))
    for name, text in agents.items():
        folder = root / ".duragent" / "agents" / name
        folder.mkdir(parents=True)
        (folder / "agent.yaml").write_text(text)
    return root / "duragent.yaml"


def doctor(config: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={UNSET: None})
    return result.exit_code, result.output.splitlines()


def test_an_unset_variable_a_bad_type_an_unknown_field_and_a_misspelt_tool_all_in_one_run(
    tmp_path: Path,
) -> None:
    helper = agent_yaml(
        "helper",
        f"    base_url: ${{{UNSET}}}\n"  # line 9
        "  session:\n"
        "    max_tool_iterations: ten\n"  # line 11
        "    ttl_hour: 5\n"  # line 12
        "  tools:\n"
        "    - type: builtin\n"
        "      name: bsh\n",  # line 15
    )
    config = workspace(tmp_path, "server:\n  port: 8080\n", helper=helper)
    file = tmp_path / ".duragent" / "agents" / "helper" / "agent.yaml"

    code, lines = doctor(config)

    assert code == 1
    told = [line for line in lines if line.startswith(("✗ [agent helper]", "! [agent helper]"))]
    assert told == [
        f"✗ [agent helper] {file}:9: spec.model.base_url: environment variable {UNSET} is not "
        f"set. Fix: export {UNSET}=… or write ${{{UNSET}:-default}}",
        f"✗ [agent helper] {file}:11: spec.session.max_tool_iterations: must be a whole number "
        "(got 'ten'). Fix: write e.g. `max_tool_iterations: 10`",
        f"! [agent helper] {file}:12: spec.session.ttl_hour: unknown field (ignored) (allowed: "
        f"{', '.join(sorted(SessionSpec.model_fields))}). Fix: did you mean 'ttl_hours'?",
        f"! [agent helper] {file}:15: spec.tools[0].name: unknown builtin tool (skipped) (got "
        f"'bsh'; allowed: {', '.join(KNOWN_BUILTIN_TOOLS)}). Fix: did you mean 'bash'?",
    ]
    assert "Input should be" not in "\n".join(lines)  # no library wording


def test_errors_in_duragent_yaml_do_not_hide_the_agents_problems(tmp_path: Path) -> None:
    config = workspace(
        tmp_path,
        f"""\
        server:
          api_token: ${{{UNSET}}}
          port: eighty
        sesions:
          ttl_hours: 1
        routes:
          - match:
              gateway: telegarm
            agent: helpr
        """,
        helper=agent_yaml("helper", "  tools:\n    - type: builtin\n      name: bsh\n"),
    )

    code, lines = doctor(config)

    assert code == 1
    text = "\n".join(lines)
    assert (
        f"✗ [config] {config}:2: server.api_token: environment variable {UNSET} is not set" in text
    )
    assert (
        f"✗ [config] {config}:3: server.port: must be a whole number (got 'eighty'). Fix: write "
        "e.g. `port: 8080`" in text
    )
    assert f"! [config] {config}:4: sesions: unknown field (ignored)" in text
    assert "Fix: did you mean 'sessions'?" in text
    assert (
        f"! [config] {config}:8: routes[0].match.gateway: no gateway of this name is configured: "
        "the rule never matches (got 'telegarm'). Fix: did you mean 'telegram'?" in text
    )
    assert (
        f"✗ [routes] {config}:9: routes[0].agent: names agent 'helpr', which is not loaded. "
        "Fix: did you mean 'helper'? (use one of: helper)" in text
    )
    assert "spec.tools[0].name: unknown builtin tool (skipped) (got 'bsh'" in text
    assert "✓ [agent helper] offline/duragent-offline" in text  # the agents were checked
    assert f"{config} loaded" not in text


def test_a_misspelt_provider_and_a_value_of_the_wrong_kind_say_what_to_write(
    tmp_path: Path,
) -> None:
    helper = agent_yaml(
        "helper",
        "  allow_external_files: sometimes\n"  # line 9
        "  session:\n"
        "    llm_timeout_seconds: [1]\n",  # line 11
    ).replace("provider: offline", "provider: opnai")  # line 7
    config = workspace(tmp_path, "", helper=helper)
    file = tmp_path / ".duragent" / "agents" / "helper" / "agent.yaml"

    _, lines = doctor(config)

    text = "\n".join(lines)
    assert (
        f"{file}:7: spec.model.provider: unknown provider and no base_url (got 'opnai'; "
        "allowed: anthropic, openai, openrouter, ollama, offline). Fix: did you mean 'openai'? "
        "Or set spec.model.base_url to an OpenAI-compatible server" in text
    )
    assert (
        f"{file}:9: spec.allow_external_files: must be true or false (got 'sometimes'). Fix: "
        "write `allow_external_files: true` or `allow_external_files: false`" in text
    )
    assert (
        f"{file}:11: spec.session.llm_timeout_seconds: must be a whole number, not a list. Fix: "
        "write one value after 'llm_timeout_seconds:'" in text
    )
