"""Pydantic's errors in plain words, each with what to write instead (issue 39)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from pydantic import BaseModel

from duragent.agents.spec import AgentManifest
from duragent.config.validation import validate_all
from duragent.config.workspace import WorkspaceConfig
from duragent.config.yamlio import load_yaml_text

AGENT = (
    "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: a\nspec:\n  model:\n"
    "    provider: offline\n    name: duragent-offline\n"
)


def errors_of(model: type[BaseModel], text: str) -> list[str]:
    _, errors, _ = validate_all(model, load_yaml_text(text, file=Path("f.yaml")), what="f")
    return [str(e) for e in errors]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "sessions:\n  ttl_hours: week\n",
            "f.yaml:2: sessions.ttl_hours: must be a whole number (got 'week'). "
            "Fix: write e.g. `ttl_hours: 168`",
        ),
        (
            "sandbox:\n  network: maybe\n",
            "f.yaml:2: sandbox.network: must be true or false (got 'maybe'). "
            "Fix: write `network: true` or `network: false`",
        ),
        (
            "server:\n  header_timeout_seconds: soon\n",
            "f.yaml:2: server.header_timeout_seconds: must be a number (got 'soon'). "
            "Fix: write e.g. `header_timeout_seconds: 10`",
        ),
        (
            "server:\n  host: [a, b]\n",
            "f.yaml:2: server.host: must be text, not a list. Fix: write one value after 'host:'",
        ),
        (
            "sessions:\n  compaction: archiv\n",
            "f.yaml:2: sessions.compaction: invalid value (got 'archiv'; allowed: discard, "
            "archive or disabled). Fix: did you mean 'archive'?",
        ),
    ],
)
def test_a_value_of_the_wrong_kind_in_duragent_yaml_says_what_to_write(
    text: str, said: str
) -> None:
    assert errors_of(WorkspaceConfig, text) == [said]


def test_a_number_where_text_is_expected_says_to_quote_it() -> None:
    text = AGENT.replace("  name: a\n", "  name: a\n  version: 1.0\n")

    assert errors_of(AgentManifest, text) == [
        "f.yaml:5: metadata.version: must be text (got 1.0). Fix: put it in quotes: "
        '`version: "1.0"`'
    ]


def test_a_name_of_the_wrong_form_says_the_form_in_words() -> None:
    [said] = errors_of(AgentManifest, AGENT.replace("name: a", "name: my agent"))

    assert said == (
        "f.yaml:4: metadata.name: is not a valid name here (got 'my agent'; allowed: letters, "
        "digits, '.', '_' and '-', starting with a letter or digit (no spaces or slashes))"
    )


def test_the_members_of_a_union_are_said_together() -> None:
    text = AGENT + (
        "  schedules:\n    - name: daily\n      schedule:\n        every:\n"
        "          every_seconds: [1]\n      payload:\n        message:\n          message: hi\n"
    )

    assert errors_of(AgentManifest, text) == [
        "f.yaml:13: spec.schedules[0].schedule.every.every_seconds: must be text or a whole "
        "number, not a list. Fix: write one value after 'every_seconds:'"
    ]


def test_what_is_left_after_a_failed_list_item_keeps_its_own_lines() -> None:
    text = AGENT + (
        "  tools:\n    - type: builtin\n      name: web\n      max_body_bytes: lots\n"
        "    - type: builtin\n      name: bsh\n"
    )

    manifest, errors, rest = validate_all(AgentManifest, load_yaml_text(text), what="f")

    assert [e.field for e in errors] == ["spec.tools[0].max_body_bytes"]
    assert manifest is not None
    assert [t.name for t in manifest.spec.tools] == ["web", "bsh"]  # the field went, not the item
    assert rest.line_of(("spec", "tools", 1, "name")) == 14


def test_a_failed_item_is_left_out_and_the_next_ones_keep_their_lines() -> None:
    text = AGENT + (
        "  tools:\n    - type: script\n      name: x\n    - type: builtin\n      name: bsh\n"
    )

    manifest, errors, rest = validate_all(AgentManifest, load_yaml_text(text), what="f")

    assert [e.field for e in errors] == ["spec.tools[0].type"]
    assert manifest is not None
    assert [t.name for t in manifest.spec.tools] == ["bsh"]
    assert rest.line_of(("spec", "tools", 0, "name")) == 13  # bsh's line, not the dropped one's


def _leaves(model: type[BaseModel], at: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, info in model.model_fields.items():
        path = (*at, info.alias or name)
        yield path
        for member in (info.annotation, *get_args(info.annotation)):
            if isinstance(member, type) and issubclass(member, BaseModel):
                yield from _leaves(member, path)


def _set(data: dict[str, Any], path: tuple[str, ...], value: object) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("model", "base"),
    [(AgentManifest, yaml.safe_load(AGENT)), (WorkspaceConfig, {})],
    ids=["agent.yaml", "duragent.yaml"],
)
def test_no_field_of_either_file_gets_the_libraries_wording(
    model: type[BaseModel], base: dict[str, Any]
) -> None:
    for path in _leaves(model):
        for bad in ("ten", 3.5, True, [1], {"a": 1}, -5, "x" * 300):
            text = yaml.safe_dump(_set(base, path, bad))
            for said in errors_of(model, text):
                assert "Input should" not in said, (path, bad, said)
                assert "Field required" not in said, (path, bad, said)
