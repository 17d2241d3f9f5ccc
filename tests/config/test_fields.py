"""No silent fields (issue 19 item 1): every field a person can write is acted on or reported.

The three formats' JSON Schemas are walked; each field must be in ``duragent.config.fields``
(acted on by a named function that really mentions it, validated only, or warned about), and
each warned field must produce a warning naming file and field from the real loaders and
from ``doctor``. A field added to a model without a line there fails here.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from duragent.agents.loader import load_agent
from duragent.agents.schema import agent_json_schema
from duragent.cli.doctor import Level, run_checks
from duragent.config import load_workspace
from duragent.config.fields import FIELDS, PLANNED, Checked, Format, Use, Warn, registry
from duragent.config.workspace import WorkspaceConfig
from duragent.errors import ConfigError
from duragent.runtime import Runtime
from duragent.tools.policy_check import check_policy_file, policy_json_schema
from duragent.tools.policy_tier import _KNOWN_FIELDS

SCHEMAS: dict[Format, Any] = {
    "agent": agent_json_schema,
    "workspace": WorkspaceConfig.model_json_schema,
    "policy": policy_json_schema,
}


def schema_fields(schema: dict[str, Any]) -> set[str]:
    """Dotted paths (``[]`` for list items) of the schema's leaf fields."""
    found: set[str] = set()

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        return node

    def structured(node: dict[str, Any]) -> list[dict[str, Any]]:
        """The object shapes ``node`` may take (a union's branches), or none for a leaf."""
        node = resolve(node)
        if "properties" in node:
            return [node]
        return [b for s in node.get("anyOf", node.get("oneOf", [])) for b in structured(s)]

    def walk(node: dict[str, Any], path: str) -> None:
        node = resolve(node)
        items = [resolve(b) for b in node.get("anyOf", [])] + [node]
        for branch in items:
            if branch.get("type") == "array" and structured(branch.get("items", {})):
                for shape in structured(branch["items"]):
                    walk(shape, f"{path}[]")
                return
        shapes = structured(node)
        if not shapes:
            found.add(path)
            return
        for shape in shapes:
            for key, sub in shape["properties"].items():
                walk(sub, f"{path}.{key}" if path else key)

    walk(schema, "")
    return found


def key_of(path: str) -> str:
    return path.rsplit(".", 1)[-1].removesuffix("[]")


def function_source(use: Use) -> str:
    """The source of the function ``use.function`` (``Class.method`` too) in ``use.module``."""
    spec = importlib.util.find_spec(use.module)
    assert spec is not None, f"module {use.module} does not exist"
    assert spec.origin, f"module {use.module} has no source file"
    source = Path(spec.origin).read_text(encoding="utf-8")
    scope: ast.AST = ast.parse(source)
    *classes, name = use.function.split(".")
    for cls in classes:  # "Class.method": the method of that class
        scope = next(n for n in ast.walk(scope) if isinstance(n, ast.ClassDef) and n.name == cls)
    for node in ast.walk(scope):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return ast.get_source_segment(source, node) or ""
    raise AssertionError(f"{use.module} has no function {use.function}")


def mentions(source: str, key: str) -> bool:
    """Reads ``.key`` or ``"key"`` (a model attribute or a mapping key), outside docstrings."""
    code = re.sub(r'"""[\s\S]*?"""', "", source)
    return re.search(rf"\.{re.escape(key)}\b|[\"']{re.escape(key)}[\"']", code) is not None


@pytest.mark.parametrize("fmt", list(SCHEMAS))
def test_every_field_of_the_format_is_acted_on_checked_or_warned_about(fmt: Format) -> None:
    fields = schema_fields(SCHEMAS[fmt]())
    missing = sorted(fields - registry(fmt).keys())
    assert not missing, (
        f"{fmt} fields with no line in duragent/config/fields.py: {missing}. Add each with the "
        "function that acts on it (Use), or Warn so serve and doctor say it has no effect."
    )


@pytest.mark.parametrize("fmt", list(SCHEMAS))
def test_every_listed_field_exists_in_the_format(fmt: Format) -> None:
    fields = schema_fields(SCHEMAS[fmt]())
    stale = sorted(FIELDS[fmt].keys() - fields)
    assert not stale, f"duragent/config/fields.py lists {fmt} fields that are gone: {stale}"


def consumers() -> list[tuple[str, str, Use]]:
    out: list[tuple[str, str, Use]] = []
    for fmt, table in FIELDS.items():
        for path, fate in table.items():
            use = fate.also if isinstance(fate, Warn) else fate
            if isinstance(use, Use):
                out.append((fmt, path, use))
    for fmt, planned in PLANNED.items():
        for path, entry in planned.items():
            if isinstance(entry.warn.also, Use):
                out.append((fmt, path, entry.warn.also))
    return out


@pytest.mark.parametrize(("fmt", "path", "use"), consumers(), ids=lambda v: str(v))
def test_the_named_consumer_really_reads_the_field(fmt: str, path: str, use: Use) -> None:
    assert mentions(function_source(use), key_of(path)), (
        f"{fmt} field {path}: {use.module}.{use.function} does not mention "
        f"'{key_of(path)}'; name the function that acts on it in duragent/config/fields.py"
    )


def test_a_planned_field_whose_work_has_landed_is_flipped() -> None:
    landed = [
        f"{fmt}: {path} ({entry.area}) → FIELDS as {entry.then}"
        for fmt, table in PLANNED.items()
        for path, entry in table.items()
        if importlib.util.find_spec(entry.lands) is not None
    ]
    assert not landed, (
        "merged work still listed as planned (it would warn about a field that works now); "
        f"move these lines from PLANNED to FIELDS: {landed}"
    )


def test_checked_fields_say_why() -> None:
    for table in FIELDS.values():
        for fate in table.values():
            if isinstance(fate, Checked):
                assert fate.why


# --- every warned field is reported, with file and field, by the loaders and doctor --------

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
spec:
  model:
    provider: offline
    name: echo
"""

SAMPLES: dict[tuple[Format, str], str] = {
    # A document fragment that sets the field to a value that is not acted on.
    ("agent", "spec.tools[].name"): "  tools:\n    - type: builtin\n      name: reload_tools\n",
}


def warned() -> list[tuple[Format, str]]:
    return [
        (fmt, path)
        for fmt in SCHEMAS
        for path, fate in registry(fmt).items()
        if isinstance(fate, Warn)
    ]


def test_every_warned_field_has_a_sample_here() -> None:
    assert set(warned()) <= SAMPLES.keys(), "add a SAMPLES entry for each Warn field"


def load_warnings(tmp_path: Path, fmt: Format, fragment: str) -> tuple[Path, list[ConfigError]]:
    if fmt == "workspace":
        file = tmp_path / "duragent.yaml"
        file.write_text(fragment)
        return file, list(load_workspace(file).warnings)
    if fmt == "agent":
        folder = tmp_path / "bot"
        folder.mkdir()
        (folder / "agent.yaml").write_text(AGENT + fragment)
        return folder / "agent.yaml", list(load_agent(folder).warnings)
    file = tmp_path / "policy.yaml"
    file.write_text("apiVersion: duragent/v1alpha1\nkind: Policy\n" + fragment)
    errors, warnings = check_policy_file(file)
    assert not errors
    return file, warnings


@pytest.mark.parametrize(("fmt", "path"), warned())
def test_a_warned_field_is_reported_with_file_field_and_fix(
    tmp_path: Path, fmt: Format, path: str
) -> None:
    file, warnings = load_warnings(tmp_path, fmt, SAMPLES[(fmt, path)])
    shaped = re.compile(re.escape(path).replace(r"\[\]", r"\[\d+\]") + "$")
    hits = [w for w in warnings if w.field and shaped.match(w.field)]
    assert hits, [str(w) for w in warnings]
    assert hits[0].file == file
    assert hits[0].line is not None
    assert hits[0].fix


def test_a_value_that_is_acted_on_is_not_warned_about(tmp_path: Path) -> None:
    _, warnings = load_warnings(tmp_path, "workspace", "sandbox:\n  mode: trust\n")
    assert warnings == []
    _, warnings = load_warnings(tmp_path, "agent", "  tools:\n    - {type: builtin, name: bash}\n")
    assert warnings == []


def test_a_misspelt_policy_key_is_reported(tmp_path: Path) -> None:
    _, warnings = load_warnings(tmp_path, "policy", "mdoe: ask\n")
    assert [w.field for w in warnings] == ["mdoe"]
    assert "mode" in (warnings[0].allowed or "")


def workspace(root: Path) -> Path:
    """A workspace setting every warned field, a misspelt key, and a broken policy."""
    samples = {fmt: "".join(t for (f, _), t in SAMPLES.items() if f == fmt) for fmt in SCHEMAS}
    (root / "duragent.yaml").write_text(samples["workspace"])
    folder = root / ".duragent" / "agents" / "bot"
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(AGENT + "  tols: []\n" + samples["agent"])
    (folder / "policy.yaml").write_text("mode: ask\nmdoe: restrict\n" + samples["policy"])
    (root / ".duragent" / "policy.yaml").write_text("mode: yolo\n")
    return root / "duragent.yaml"


def expected_fields() -> list[str]:
    """The fields the report must name: the misspelt keys and each warned sample's field."""
    return ["spec.tols", "mdoe"] + [
        path.replace("[]", "[0]") for fmt, path in warned() if fmt != "workspace"
    ]


def test_doctor_reports_each_field_with_no_effect_and_a_broken_policy(tmp_path: Path) -> None:
    findings = run_checks(workspace(tmp_path))
    warnings = [f.message for f in findings if f.level is Level.WARNING]
    errors = [f.message for f in findings if f.level is Level.ERROR]
    for field in expected_fields():
        assert any(f": {field}: " in w for w in warnings), (field, warnings)
    assert any(".duragent/policy.yaml:1: mode: invalid value" in e for e in errors), errors


def test_serve_logs_the_same_warnings_when_it_loads_the_agents(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime(load_workspace(workspace(tmp_path)), env={})
    with caplog.at_level(logging.WARNING, logger="duragent.runtime"):
        runtime.reload_agents()
    logged = [r.getMessage() for r in caplog.records]
    for field in expected_fields():
        assert any(f": {field}: " in m for m in logged), (field, logged)
    assert any("mode: invalid value" in m for m in logged), logged


def test_the_policy_model_has_the_fields_the_policy_reader_knows() -> None:
    """``PolicyDocument`` (the schema walked above) and ``policy_files`` agree on the format."""
    fields = schema_fields(policy_json_schema())
    known = {".".join((*at, key)) for at, keys in _KNOWN_FIELDS.items() for key in keys}
    assert {f.split(".")[0] for f in fields} == {k for k in known if "." not in k}
    assert {".".join(f.split(".")[:2]).removesuffix("[]") for f in fields if "." in f} == {
        k for k in known if "." in k
    }
