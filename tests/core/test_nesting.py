"""Nesting is measured before parsing, so no file can crash the process through libyaml."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from duragent.core.nesting import MAX_NESTING_DEPTH, json_too_deep, loads_bounded, yaml_too_deep


def test_ordinary_configuration_is_far_below_the_limit() -> None:
    text = textwrap.dedent(
        """\
        spec:
          model: {provider: openai, name: "gpt-4o [x"}   # a [ in a comment
          tools:
            - type: builtin
              name: bash
          system: |
            [[[[[[[[ text in a block scalar is not nesting
          labels: {a: 'it''s [', b: "quote \\" ["}
        """
    )
    assert yaml_too_deep(text, limit=8) is None


def test_deep_flow_block_and_compact_nesting_are_found_with_their_line() -> None:
    flow = "a: 1\nb: " + "[" * 500 + "]" * 500 + "\n"
    block = "".join(" " * i + "k:\n" for i in range(300))
    compact = "x: 1\n" + "- " * 300 + "x\n"
    assert yaml_too_deep(flow) is not None
    assert getattr(yaml_too_deep(flow), "line", 0) == 2
    assert yaml_too_deep(block) is not None
    assert yaml_too_deep(compact) is not None
    assert getattr(yaml_too_deep(compact), "line", 0) == 2


def test_json_depth_is_exact_and_ignores_brackets_in_strings() -> None:
    inside = json.dumps({"s": "[" * 10_000 + '\\"{'})
    assert json_too_deep(inside) is None
    at_limit = "[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH
    assert json_too_deep(at_limit) is None
    assert json_too_deep("[" + at_limit + "]") is not None


def test_the_limit_can_be_raised_with_an_environment_variable() -> None:
    code = "from duragent.core.nesting import MAX_NESTING_DEPTH as m; print(m)"
    env = {"DURAGENT_MAX_NESTING_DEPTH": "500", "PYTHONPATH": ":".join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "500"


def test_bounded_json_loading_refuses_deep_input_with_a_value_error() -> None:
    for depth in (MAX_NESTING_DEPTH + 1, 50_000):
        with pytest.raises(ValueError, match="nested more than"):
            loads_bounded("[" * depth + "]" * depth)
    assert loads_bounded('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}


def test_brackets_in_quoted_strings_spanning_lines_are_not_nesting() -> None:
    text = (
        'a: "ends with a backslash \\\\" \n'
        'b: "[[[[[[[[[[\n  [[[[[[[[[[ \\" [[[["\n'
        "c: 'x''[[[[[[[['\n"
    )
    assert yaml_too_deep(text, limit=8) is None
    assert yaml_too_deep(text + "d: [[[[[[[[[[]]]]]]]]]]\n", limit=8) is not None
