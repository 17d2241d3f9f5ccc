"""Prompt files stay in the agent's folder; agent fields are shown as written, never expanded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from duragent.agents import load_agent
from duragent.agents.exposure import redact_url_credentials, served_value
from duragent.errors import ConfigErrors

WriteAgent = Callable[..., Path]

HEADER = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: a
spec:
  model:
    provider: offline
    name: duragent-offline
"""


def test_a_prompt_path_climbing_out_of_the_folder_is_refused(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER + "  system_prompt: ../../../../../../../etc/passwd\n")
    with pytest.raises(ConfigErrors) as info:
        load_agent(folder)
    (error,) = info.value.errors
    assert error.field == "spec.system_prompt"
    assert "outside the agent's folder" in str(error)
    assert "allow_external_files" in str(error)


def test_a_prompt_symlink_to_a_file_elsewhere_is_refused(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0")
    folder = write_agent("a", HEADER + "  instructions: INSTRUCTIONS.md\n")
    (folder / "INSTRUCTIONS.md").symlink_to(secret)
    with pytest.raises(ConfigErrors, match="outside the agent's folder"):
        load_agent(folder)


def test_opting_in_loads_an_outside_file_and_warns(write_agent: WriteAgent, tmp_path: Path) -> None:
    (tmp_path / "shared.md").write_text("shared prompt")
    text = HEADER + "  system_prompt: ../../../shared.md\n  allow_external_files: true\n"
    agent = load_agent(write_agent("a", text))
    assert agent.system_prompt == "shared prompt"
    assert any(w.field == "spec.system_prompt" for w in agent.warnings)


def test_a_skill_symlinked_out_of_the_agents_is_skipped_with_a_warning(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere" / "evil"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text("---\nname: evil\ndescription: d\n---\nsecret\n")
    folder = write_agent("a", HEADER)
    (folder / "skills").mkdir()
    (folder / "skills" / "evil").symlink_to(outside)
    agent = load_agent(folder)
    assert agent.skills == ()
    assert any("resolves outside" in str(w) for w in agent.warnings)


def test_expanded_fields_are_served_as_written_and_urls_without_credentials(
    write_agent: WriteAgent,
) -> None:
    text = HEADER.replace("  name: a\n", "  name: a\n  description: key ${DESC_KEY}\n")
    text = text.replace(
        "    name: duragent-offline\n",
        "    name: duragent-offline\n    base_url: https://u:${PASS}@llm.example/v1\n",
    )
    folder = write_agent("a", text)
    agent = load_agent(folder, env={"DESC_KEY": "sk-live-123", "PASS": "hunter2"})
    assert agent.description == "key sk-live-123"  # the runtime uses the expanded value
    shown = served_value(agent.written, ("metadata", "description"), agent.description)
    assert shown == "key ${DESC_KEY}"
    url = served_value(agent.written, ("spec", "model", "base_url"), agent.model.base_url)
    assert url == "https://***@llm.example/v1"
    assert redact_url_credentials("see http://a:b@h/x and ftp://c@d") == (
        "see http://***@h/x and ftp://***@d"
    )


def test_literal_secrets_in_served_fields_are_warned_about(write_agent: WriteAgent) -> None:
    text = HEADER.replace(
        "  name: a\n",
        "  name: a\n  labels:\n    api_token: abc\n    team: ghp_abcdefghijklmnopqrstuvwxyz\n",
    ).replace("provider: offline\n", "provider: offline\n    base_url: http://u:p@h/v1\n")
    agent = load_agent(write_agent("a", text))
    fields = sorted(w.field or "" for w in agent.warnings)
    assert fields == ["metadata.labels.api_token", "metadata.labels.team", "spec.model.base_url"]
