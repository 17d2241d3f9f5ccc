"""The shipped JSON Schema of agent.yaml: never stale, and it accepts the example agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from duragent.agents.schema import SCHEMA_PATH, agent_json_schema, render_schema

EXAMPLE_AGENT_YAML = (
    Path(__file__).resolve().parents[2]
    / "examples"
    / ".duragent"
    / "agents"
    / "assistant"
    / "agent.yaml"
)

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def example_agent() -> Any:
    return yaml.safe_load(EXAMPLE_AGENT_YAML.read_text(encoding="utf-8"))


def shipped_schema() -> Any:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def problems(value: Any, schema: dict[str, Any], root: dict[str, Any], at: str = "") -> list[str]:
    """A small strict checker: the subset of JSON Schema pydantic emits, unknown keys refused.

    Stricter than the schema (which allows extra keys) on purpose: the shipped example must
    use only documented fields.
    """
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return problems(value, root["$defs"][name], root, at)
    if "anyOf" in schema or "oneOf" in schema:
        branches = [
            problems(value, s, root, at) for s in schema["anyOf" if "anyOf" in schema else "oneOf"]
        ]
        return [] if any(not b for b in branches) else [f"{at}: matches no branch"]
    found: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, JSON_TYPES[kind])
        if kind in {"integer", "number"} and isinstance(value, bool):
            ok = False
        if not ok:
            return [f"{at}: expected {kind}, got {value!r}"]
    if "const" in schema and value != schema["const"]:
        found.append(f"{at}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{at}: {value!r} not in {schema['enum']}")
    if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
        found.append(f"{at}: {value!r} must be > {schema['exclusiveMinimum']}")
    if "minimum" in schema and not value >= schema["minimum"]:
        found.append(f"{at}: {value!r} must be >= {schema['minimum']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        found.append(f"{at}: {value!r} is too short")
    if isinstance(value, dict) and "properties" in schema:
        properties = schema["properties"]
        found += [f"{at}.{k}: required" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key not in properties:
                found.append(f"{at}.{key}: not in the schema")
            else:
                found += problems(item, properties[key], root, f"{at}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += problems(item, schema["items"], root, f"{at}[{i}]")
    return found


def test_shipped_schema_file_equals_the_rendered_schema() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema(), (
        "agent.schema.json is stale: run `python -m duragent.agents.schema`"
    )


def test_schema_declares_draft_2020_12_and_the_agent_document() -> None:
    schema = agent_json_schema()

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "duragent agent.yaml"
    assert schema["required"] == ["apiVersion", "kind", "metadata", "spec"]
    assert schema["properties"]["apiVersion"]["const"] == "duragent/v1alpha1"
    assert schema["properties"]["kind"]["const"] == "Agent"
    context = schema["$defs"]["ContextSpec"]["properties"]
    assert context["max_history_tokens"]["default"] == 20_000
    assert context["max_tool_result_tokens"]["exclusiveMinimum"] == 0
    assert context["tool_result_truncation"]["enum"] == ["head", "tail", "both"]


def test_example_agent_uses_only_fields_the_schema_declares() -> None:
    schema = shipped_schema()

    assert problems(example_agent(), schema, schema) == []


def test_schema_checker_rejects_bad_values_and_unknown_keys() -> None:
    schema = shipped_schema()
    doc = example_agent()
    doc["kind"] = "Robot"
    doc["spec"]["session"]["on_disconnect"] = "vanish"
    doc["spec"]["session"]["context"]["max_tool_result_tokens"] = 0
    doc["spec"]["tools"].append({"type": "cli", "name": "x"})
    doc["spec"]["colour"] = "red"
    del doc["spec"]["model"]["name"]

    assert problems(doc, schema, schema) == [
        ".kind: expected 'Agent', got 'Robot'",
        ".spec.model.name: required",
        ".spec.session.on_disconnect: 'vanish' not in ['pause', 'continue']",
        ".spec.session.context.max_tool_result_tokens: 0 must be > 0",
        ".spec.tools[1]: matches no branch",
        ".spec.colour: not in the schema",
    ]


def test_example_agent_is_valid_under_jsonschema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = shipped_schema()

    jsonschema.Draft202012Validator.check_schema(schema)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(example_agent()))

    assert errors == []
