"""The agent catalog: good agents load, broken ones are kept with their errors."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from duragent.agents import AgentCatalog, load_catalog
from duragent.errors import AgentNotFoundError, ConfigError, ConfigErrors, NotFoundError

WriteAgent = Callable[..., Path]


def agents_dir(tmp_path: Path) -> Path:
    return tmp_path / ".duragent" / "agents"


def manifest(name: str, extra: str = "") -> str:
    return (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n"
        f"  name: {name}\nspec:\n  model:\n    provider: offline\n    name: m\n{extra}"
    )


def test_every_good_agent_is_loaded_and_named_in_sorted_order(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    for name in ("zeta", "alpha", "mid"):
        write_agent(name)

    catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["alpha", "mid", "zeta"]
    assert catalog.broken == {}
    assert catalog.get("mid").directory == agents_dir(tmp_path) / "mid"


def test_one_broken_agent_does_not_stop_the_others(
    write_agent: WriteAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_agent("good")
    broken = write_agent("broken", manifest("broken").replace("kind: Agent", "kind: Nope"))
    write_agent("also-good")

    with caplog.at_level(logging.DEBUG, logger="duragent.agents"):
        catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["also-good", "good"]
    assert list(catalog.broken) == [broken]
    err = catalog.broken[broken]
    assert isinstance(err, ConfigErrors)
    assert str(err) == (
        f"{broken / 'agent.yaml'}:2: kind: invalid value (got 'Nope'; allowed: Agent)"
    )
    assert caplog.text == ""  # the caller says it (serve logs it once, doctor shows it)


def test_yaml_syntax_error_in_one_agent_is_kept_as_broken(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    write_agent("good")
    bad = write_agent("bad", "apiVersion: [\n")

    catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["good"]
    assert catalog.broken[bad].line == 2
    assert catalog.broken[bad].reason.startswith("YAML syntax error")


def test_duplicate_metadata_name_reports_the_second_folder_as_broken(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    first = write_agent("a-first", manifest("helper"))
    second = write_agent("b-second", manifest("helper"))

    catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["helper"]
    assert catalog.get("helper").directory == first
    assert list(catalog.broken) == [second]
    err = catalog.broken[second]
    assert (err.file, err.field, err.value) == (second / "agent.yaml", "metadata.name", "helper")
    assert str(err) == (
        f"{second / 'agent.yaml'}: metadata.name: duplicate agent name (already defined in "
        f"{first}) (got 'helper'). Fix: give each agent a unique metadata.name"
    )


def test_agents_are_keyed_by_metadata_name_not_folder(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    write_agent("folder", manifest("display-name"))

    catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["display-name"]
    assert catalog.get("display-name").warnings[0].field == "metadata.name"


def test_folders_without_agent_yaml_and_stray_files_are_ignored(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    write_agent("real")
    (agents_dir(tmp_path) / "notes").mkdir()
    (agents_dir(tmp_path) / "README.md").write_text("hi", encoding="utf-8")

    catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["real"]
    assert catalog.broken == {}


def test_missing_agents_directory_gives_an_empty_catalog(tmp_path: Path) -> None:
    catalog = load_catalog(tmp_path / "nowhere")

    assert catalog.names() == []
    assert catalog.broken == {}


def test_get_of_an_unknown_name_raises_agent_not_found(write_agent: WriteAgent) -> None:
    catalog = load_catalog(write_agent("known").parent)

    with pytest.raises(AgentNotFoundError) as info:
        catalog.get("unknown")

    assert info.value.name == "unknown"
    assert str(info.value) == "agent 'unknown' not found"
    assert isinstance(info.value, NotFoundError)
    assert isinstance(info.value, LookupError)


def test_agent_not_found_can_be_caught_as_lookup_error() -> None:
    with pytest.raises(LookupError):
        AgentCatalog().get("anything")


def test_workspace_directives_and_env_reach_every_agent(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    directives = tmp_path / ".duragent" / "directives"
    directives.mkdir(parents=True)
    (directives / "tone.md").write_text("Be kind.\n", encoding="utf-8")
    write_agent("one", manifest("one").replace("name: m", "name: ${MODEL}"))
    write_agent("two")

    catalog = load_catalog(
        agents_dir(tmp_path), workspace_directives=directives, env={"MODEL": "x"}
    )

    assert catalog.get("one").model.name == "x"
    for name in ("one", "two"):
        assert [d.text for d in catalog.get(name).directives] == ["Be kind."]


def test_unset_variable_breaks_only_the_agent_that_uses_it(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    uses = write_agent("uses", manifest("uses").replace("name: m", "name: ${MODEL}"))
    write_agent("plain")

    catalog = load_catalog(agents_dir(tmp_path), env={})

    assert catalog.names() == ["plain"]
    assert catalog.broken[uses].reason == "environment variable MODEL is not set"
    assert catalog.broken[uses].line == 8


def test_unreadable_directive_file_does_not_break_the_catalog(
    write_agent: WriteAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = write_agent("a")
    (folder / "directives").mkdir()
    (folder / "directives" / "latin1.md").write_bytes(b"caf\xe9\n")
    (folder / "directives" / "dir.md").mkdir()
    (folder / "directives" / "ok.md").write_text("Fine.\n", encoding="utf-8")
    write_agent("b")

    with caplog.at_level(logging.WARNING, logger="duragent.agents.directives"):
        catalog = load_catalog(agents_dir(tmp_path))

    assert catalog.names() == ["a", "b"]
    assert [d.source for d in catalog.get("a").directives] == ["ok"]
    assert f"directive {folder / 'directives' / 'latin1.md'} skipped" in caplog.text


def test_broken_errors_are_config_errors_with_a_file(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    bad = write_agent("bad", manifest("bad", "  soul: NOPE.md\n"))

    catalog = load_catalog(agents_dir(tmp_path))

    err = catalog.broken[bad]
    assert isinstance(err, ConfigError)
    assert err.file == bad / "agent.yaml"
    assert (err.field, err.line) == ("spec.soul", 9)
