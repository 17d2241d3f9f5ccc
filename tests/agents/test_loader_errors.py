"""``agent.yaml`` errors: each names the file, line, field, value and what is allowed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from duragent.agents import load_agent
from duragent.agents.spec import KNOWN_PROVIDERS
from duragent.errors import ConfigError, ConfigErrors

WriteAgent = Callable[..., Path]

# Line numbers below refer to this document (plus whatever a test appends from line 9).
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


def load_error(folder: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_agent(folder)
    return info.value


def only_error(folder: Path) -> ConfigError:
    err = load_error(folder)
    assert isinstance(err, ConfigErrors)
    assert len(err.errors) == 1, str(err)
    return err.errors[0]


def test_unknown_api_version_shows_the_value_and_the_allowed_one(
    write_agent: WriteAgent,
) -> None:
    folder = write_agent("a", HEADER.replace("duragent/v1alpha1", "duragent/v2"))

    err = only_error(folder)

    assert (err.field, err.line, err.value, err.allowed) == (
        "apiVersion",
        1,
        "duragent/v2",
        "duragent/v1alpha1",
    )
    assert str(err) == (
        f"{folder / 'agent.yaml'}:1: apiVersion: invalid value "
        "(got 'duragent/v2'; allowed: duragent/v1alpha1)"
    )


def test_wrong_kind_shows_the_value_and_the_allowed_one(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER.replace("kind: Agent", "kind: Tool"))

    assert str(only_error(folder)) == (
        f"{folder / 'agent.yaml'}:2: kind: invalid value (got 'Tool'; allowed: Agent)"
    )


def test_missing_model_name_is_a_required_field_error_with_its_line(
    write_agent: WriteAgent,
) -> None:
    folder = write_agent("a", HEADER.replace("    name: duragent-offline\n", ""))

    err = only_error(folder)

    assert (err.field, err.line, err.reason) == (
        "spec.model.name",
        6,
        "required field is missing",
    )
    assert str(err) == (
        f"{folder / 'agent.yaml'}:6: spec.model.name: required field is missing. "
        "Fix: add 'name: …' here"
    )


def test_a_misspelt_required_key_is_named_as_the_likely_typo(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER.replace("  model:", "  modle:"))

    err = only_error(folder)

    assert str(err) == (
        f"{folder / 'agent.yaml'}:5: spec.model: required field is missing; 'modle' (line 6) "
        "looks like a misspelling of it. Fix: rename 'modle' to 'model'"
    )


def test_missing_top_level_sections_are_all_reported(write_agent: WriteAgent) -> None:
    folder = write_agent("a", "apiVersion: duragent/v1alpha1\n")

    err = load_error(folder)

    assert isinstance(err, ConfigErrors)
    assert [(e.field, e.reason) for e in err.errors] == [
        ("kind", "required field is missing"),
        ("metadata", "required field is missing"),
        ("spec", "required field is missing"),
    ]


def test_blank_model_name_is_rejected(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER.replace("name: duragent-offline", "name: '   '"))

    assert str(only_error(folder)) == (
        f"{folder / 'agent.yaml'}:8: spec.model.name: model name must not be blank (got '   ')"
    )


def test_empty_model_name_is_rejected(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER.replace("name: duragent-offline", "name: ''"))

    assert str(only_error(folder)) == (
        f"{folder / 'agent.yaml'}:8: spec.model.name: must not be empty (got '')"
    )


def test_zero_max_tool_result_tokens_must_be_greater_than_zero(
    write_agent: WriteAgent,
) -> None:
    text = HEADER + "  session:\n    context:\n      max_tool_result_tokens: 0\n"
    folder = write_agent("a", text)

    err = only_error(folder)

    assert str(err) == (
        f"{folder / 'agent.yaml'}:11: spec.session.context.max_tool_result_tokens: "
        "must be greater than 0 (got 0)"
    )


BAD_ENUMS = [
    ("session:\n    on_disconnect: stop", "spec.session.on_disconnect", 10, "pause or continue"),
    (
        "session:\n    compaction: shred",
        "spec.session.compaction",
        10,
        "discard, archive or disabled",
    ),
    (
        "session:\n    context:\n      tool_result_truncation: middle",
        "spec.session.context.tool_result_truncation",
        11,
        "head, tail or both",
    ),
    ("memory:\n    backend: sqlite", "spec.memory.backend", 10, "filesystem"),
]


@pytest.mark.parametrize(("yaml_tail", "field", "line", "allowed"), BAD_ENUMS)
def test_bad_enum_value_lists_the_allowed_values(
    write_agent: WriteAgent, yaml_tail: str, field: str, line: int, allowed: str
) -> None:
    folder = write_agent("a", f"{HEADER}  {yaml_tail}\n")
    bad = yaml_tail.rsplit(": ", 1)[1]

    err = only_error(folder)

    assert (err.field, err.line, err.value, err.allowed) == (field, line, bad, allowed)
    assert str(err) == (
        f"{folder / 'agent.yaml'}:{line}: {field}: invalid value (got {bad!r}; allowed: {allowed})"
    )


@pytest.mark.parametrize("field", ["soul", "system_prompt", "instructions"])
def test_missing_prompt_file_names_the_field_and_the_path(
    write_agent: WriteAgent, field: str
) -> None:
    folder = write_agent("a", HEADER + f"  {field}: ./MISSING.md\n")

    err = only_error(folder)

    assert (err.field, err.line, err.value) == (f"spec.{field}", 9, "./MISSING.md")
    assert str(err) == (
        f"{folder / 'agent.yaml'}:9: spec.{field}: referenced file does not exist "
        f"(got './MISSING.md'). Fix: create {folder.resolve() / 'MISSING.md'} or remove the field"
    )


def test_prompt_path_that_is_a_directory_cannot_be_read(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER + "  soul: prompts\n")
    (folder / "prompts").mkdir()

    err = only_error(folder)

    assert err.field == "spec.soul"
    assert err.reason.startswith("cannot read referenced file: [Errno 21] Is a directory")


def test_yaml_syntax_error_reports_the_line(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER + "  tools: [\n    name: x\n")

    err = load_error(folder)

    assert type(err) is ConfigError
    assert err.file == folder / "agent.yaml"
    assert err.line == 11
    assert err.reason.startswith("YAML syntax error: ")


def test_non_mapping_document_is_an_error(write_agent: WriteAgent) -> None:
    folder = write_agent("a", "just a sentence\n")

    err = load_error(folder)

    assert str(err) == (
        f"{folder / 'agent.yaml'}:1: agent.yaml must be a YAML mapping of keys to values "
        "(got 'str')"
    )


def test_missing_agent_yaml_is_a_file_not_found_error(tmp_path: Path) -> None:
    assert str(load_error(tmp_path)) == f"{tmp_path / 'agent.yaml'}: file not found"


def test_unknown_provider_without_base_url_is_an_error(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER.replace("provider: offline", "provider: Mistral"))

    err = only_error(folder)

    assert (err.field, err.line, err.value) == ("spec.model.provider", 7, "mistral")
    assert err.allowed == ", ".join(KNOWN_PROVIDERS)
    assert str(err) == (
        f"{folder / 'agent.yaml'}:7: spec.model.provider: unknown provider and no base_url "
        "(got 'mistral'; allowed: anthropic, openai, openrouter, ollama, offline). "
        "Fix: use a known provider, or set spec.model.base_url to an OpenAI-compatible server"
    )


def test_cli_tool_whose_command_does_not_exist_is_an_error(write_agent: WriteAgent) -> None:
    text = HEADER + "  tools:\n    - type: cli\n      name: t\n      command: bin/run.sh\n"
    folder = write_agent("a", text)

    err = only_error(folder)

    assert str(err) == (
        f"{folder / 'agent.yaml'}:12: spec.tools[0].command: CLI tool command does not exist "
        f"(got 'bin/run.sh'). Fix: create {folder / 'bin/run.sh'} or fix the path"
    )


def test_cli_tool_whose_command_is_a_directory_is_an_error(write_agent: WriteAgent) -> None:
    text = HEADER + "  tools:\n    - type: cli\n      name: t\n      command: bin\n"
    folder = write_agent("a", text)
    (folder / "bin").mkdir()

    err = only_error(folder)

    assert (err.field, err.line, err.reason) == (
        "spec.tools[0].command",
        12,
        "CLI tool command is not a file",
    )


def test_unknown_tool_type_lists_the_allowed_types(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER + "  tools:\n    - type: script\n      name: t\n")

    assert str(only_error(folder)) == (
        f"{folder / 'agent.yaml'}:10: spec.tools[0].type: invalid value "
        "(got 'script'; allowed: builtin, cli)"
    )


def test_tool_without_type_says_the_type_is_missing(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER + "  tools:\n    - name: bash\n")

    err = only_error(folder)

    assert (err.field, err.line, err.reason, err.fix) == (
        "spec.tools[0].type",
        10,
        "required field is missing",
        "add 'type: …' here",
    )


def test_tool_written_as_a_bare_name_must_be_a_mapping(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER + "  tools:\n    - bash\n")

    assert str(only_error(folder)) == (
        f"{folder / 'agent.yaml'}:10: spec.tools[0]: must be a mapping of keys to values "
        "(got 'bash')"
    )


def test_invalid_metadata_name_is_rejected(write_agent: WriteAgent) -> None:
    folder = write_agent("a", HEADER.replace("name: a", "name: my agent"))

    err = only_error(folder)

    assert (err.field, err.line, err.value) == ("metadata.name", 4, "my agent")


def test_several_validation_errors_in_one_file_are_all_reported_in_line_order(
    write_agent: WriteAgent,
) -> None:
    text = HEADER.replace("kind: Agent", "kind: Robot") + (
        "  session:\n"
        "    max_tool_iterations: 0\n"
        "    on_disconnect: vanish\n"
        "    context:\n"
        "      max_tool_result_tokens: -1\n"
    )
    folder = write_agent("a", text)

    err = load_error(folder)

    assert isinstance(err, ConfigErrors)
    assert [(e.field, e.line) for e in err.errors] == [
        ("kind", 2),
        ("spec.session.max_tool_iterations", 10),
        ("spec.session.on_disconnect", 11),
        ("spec.session.context.max_tool_result_tokens", 13),
    ]
    assert str(err).splitlines() == [e.render() for e in err.errors]
    assert str(err).count(str(folder / "agent.yaml")) == 4


def test_file_problems_found_after_validation_are_all_reported(
    write_agent: WriteAgent,
) -> None:
    text = HEADER.replace("provider: offline", "provider: nowhere") + (
        "  soul: SOUL.md\n"
        "  instructions: INSTR.md\n"
        "  tools:\n"
        "    - type: cli\n"
        "      name: t\n"
        "      command: run.sh\n"
    )
    folder = write_agent("a", text)

    err = load_error(folder)

    assert isinstance(err, ConfigErrors)
    assert [(e.field, e.line) for e in err.errors] == [
        ("spec.model.provider", 7),
        ("spec.soul", 9),
        ("spec.instructions", 10),
        ("spec.tools[0].command", 14),
    ]


def test_unset_environment_variable_in_agent_yaml_names_it_and_its_field(
    write_agent: WriteAgent,
) -> None:
    folder = write_agent("a", HEADER + "    base_url: ${LLM_URL}\n")

    with pytest.raises(ConfigError) as info:
        load_agent(folder, env={})

    assert str(info.value) == (
        f"{folder / 'agent.yaml'}:9: spec.model.base_url: environment variable LLM_URL is not "
        "set. Fix: export LLM_URL=… or write ${LLM_URL:-default}"
    )


def test_an_unset_variable_does_not_hide_the_other_errors_of_the_file(
    write_agent: WriteAgent,
) -> None:
    text = HEADER.replace("kind: Agent", "kind: Robot") + (
        "    base_url: ${LLM_URL}\n  session:\n    max_tool_iterations: ten\n"
    )
    folder = write_agent("a", text)

    with pytest.raises(ConfigErrors) as info:
        load_agent(folder, env={})

    assert [(e.line, e.field, e.reason) for e in info.value.errors] == [
        (2, "kind", "invalid value"),
        (9, "spec.model.base_url", "environment variable LLM_URL is not set"),
        (11, "spec.session.max_tool_iterations", "must be a whole number"),
    ]


def test_model_vision_that_is_not_a_boolean_is_rejected_with_its_line(
    write_agent: WriteAgent,
) -> None:
    folder = write_agent("a", HEADER + "    vision: sometimes\n")

    error = only_error(folder)

    assert (error.line, error.field) == (9, "spec.model.vision")
