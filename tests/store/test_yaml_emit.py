"""The snapshot YAML writer: any JSON-like data parses back exactly (PyYAML's C loader)."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.store.yaml_emit import dump_lines, dump_yaml, quote

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _no_surrogates(text: str) -> str:
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def _load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_round_trips_as_a_quoted_scalar(text: str) -> None:
    assert _load(f"v: {quote(text)}\n")["v"] == _no_surrogates(text)


def test_characters_only_yaml_treats_as_line_breaks_are_escaped() -> None:
    for ch in ("\x85", "\u2028", "\u2029", "\ufeff", "\x7f", "\x9f"):
        assert ch not in quote(f"a{ch}b")
        assert _load(f"v: {quote(f'a{ch}b')}\n")["v"] == f"a{ch}b"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_nested_documents_round_trip(data: dict[str, Any]) -> None:
    assert (_load(dump_yaml(data)) or {}) == data


def test_pre_rendered_lines_join_into_the_same_document() -> None:
    items = [{"role": "user", "content": "hi\nthere"}, {"role": "assistant", "content": ""}]
    whole = dump_yaml({"a": 1, "conversation": items})
    assert whole == dump_yaml({"a": 1}) + "conversation:\n" + "".join(
        dump_lines([item]) for item in items
    )
