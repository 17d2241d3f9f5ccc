"""Pydantic's validation errors in plain words: what is wrong, where, and what to write.

Pydantic says ``Input should be a valid integer, unable to parse string as an integer``; a
person reading ``doctor`` needs ``must be a whole number (got 'ten'). Fix: write e.g.
`max_tool_iterations: 10```. Every error becomes a ``ConfigError`` naming the file, the line
(from the YAML node tree), the dotted field path as written in the file, the value found and,
where it helps, a fix: an example of the right form (the field's default when it has one),
the allowed values, or the name the value was probably meant to be (``did you mean``).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticUndefined

from duragent.config.yamlio import LocatedYaml
from duragent.errors import ConfigError

__all__ = ["close_match", "did_you_mean", "dotted", "to_config_error"]

_MISSING = object()

_NOUNS = {
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "text",
}
"""Error kinds that mean "the value has the wrong type", and the type in words."""

_PATTERNS = {
    r"^[A-Za-z0-9][A-Za-z0-9._-]*$": "letters, digits, '.', '_' and '-', starting with a "
    "letter or digit (no spaces or slashes)",
    r"^[a-z0-9][a-z0-9_-]*$": "lower-case letters, digits, '_' and '-', starting with a "
    "letter or digit",
}
"""The patterns of the models' fields, in words (a regular expression is not a fix)."""

_BOUNDS = {
    "greater_than": "greater than",
    "greater_than_equal": "at least",
    "less_than": "less than",
    "less_than_equal": "at most",
}


def close_match(wanted: str, candidates: Sequence[object], cutoff: float = 0.75) -> str | None:
    """The candidate ``wanted`` looks like a misspelling of (``modle`` for ``model``), or None.

    Case is ignored (``Bash`` is ``bash``); the candidate is returned as written.
    """
    names = {c.lower(): c for c in candidates if isinstance(c, str) and c != wanted}
    matches = difflib.get_close_matches(wanted.lower(), list(names), n=1, cutoff=cutoff)
    return names[matches[0]] if matches else None


def did_you_mean(wanted: object, candidates: Sequence[object]) -> str | None:
    """``did you mean 'x'?`` for a value close to one of ``candidates``, else None."""
    if not isinstance(wanted, str):
        return None
    close = close_match(wanted, candidates, cutoff=0.6)
    return f"did you mean '{close}'?" if close else None


def dotted(path: Sequence[str | int]) -> str:
    """``spec.tools[0].name`` for ``("spec", "tools", 0, "name")``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _has_key(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def field_path(loc: Sequence[str | int], data: Any) -> list[str | int]:
    """The part of pydantic's ``loc`` that names keys in the file (drops union tags)."""
    path: list[str | int] = []
    node: Any = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if _has_key(node, part):
            path.append(part)
            node = node[part]
        elif node is _MISSING or isinstance(part, int) or (last and isinstance(node, dict)):
            path.append(part)  # a key that is not in the file (a missing field)
            node = _MISSING
        # else: a union/validator tag pydantic inserted (``int``, ``builtin``): not a key.
    return path


def _node_at(data: Any, path: Sequence[str | int]) -> Any:
    node = data
    for part in path:
        if not _has_key(node, part):
            return _MISSING
        node = node[part]
    return node


def _strip(tp: Any) -> Any:
    """``X`` for ``Annotated[X, …]`` and ``X | None``; other unions as they are."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
            continue
        if get_origin(tp) in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp


def _member(tp: Any, tag: str | int) -> Any:
    """The member of union ``tp`` that pydantic's ``loc`` tag names (a discriminator value)."""
    for member in get_args(tp):
        member = _strip(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            for info in member.model_fields.values():
                if get_origin(info.annotation) is Literal and tag in get_args(info.annotation):
                    return member
    return None


def _field_info(model: type[BaseModel], loc: Sequence[str | int]) -> FieldInfo | None:
    """The declaration of the field pydantic's ``loc`` points at (None: not a model field)."""
    tp: Any = model
    info: FieldInfo | None = None
    for part in loc:
        tp = _strip(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            by_key = {(f.alias or n): f for n, f in tp.model_fields.items()}
            info = by_key.get(part) or tp.model_fields.get(part)
            if info is None:
                return None
            tp = info.annotation
        elif get_origin(tp) in (list, tuple) and isinstance(part, int):
            tp, info = get_args(tp)[0], None
        elif get_origin(tp) is dict:
            tp, info = get_args(tp)[1], None
        elif get_origin(tp) in (Union, types.UnionType):
            tp = _member(tp, part)
            if tp is None:
                return None
        else:
            return None
    return info


def _bounds(info: FieldInfo | None) -> tuple[float | None, float | None]:
    low = high = None
    for rule in info.metadata if info is not None else ():
        if isinstance(rule, annotated_types.Ge):
            low = rule.ge
        elif isinstance(rule, annotated_types.Gt):
            low = rule.gt + (1 if isinstance(rule.gt, int) else 0.5)  # type: ignore[operator]
        elif isinstance(rule, annotated_types.Le):
            high = rule.le
        elif isinstance(rule, annotated_types.Lt):
            high = rule.lt - (1 if isinstance(rule.lt, int) else 0.5)  # type: ignore[operator]
    return low, high  # type: ignore[return-value]


def _example(kind: str, info: FieldInfo | None, value: object) -> str:
    """A value of the right type for the field: its default, else one within its bounds."""
    default = info.default if info is not None else PydanticUndefined
    whole = _NOUNS.get(kind) == "a whole number"
    if whole and type(default) is int:
        return str(default)
    if not whole and type(default) in (int, float):
        return str(default)
    if kind == "int_from_float" and isinstance(value, float):
        return str(round(value))
    low, high = _bounds(info)
    guess: float = 10 if whole else 1.5
    if low is not None:
        guess = max(guess, low)
    if high is not None:
        guess = min(guess, high)
    return str(int(guess)) if whole else str(guess)


def _leaf(path: Sequence[str | int]) -> str:
    names = [p for p in path if isinstance(p, str)]
    return names[-1] if names else "value"


def _wrong_type(
    kinds: list[str], err: ErrorDetails, path: list[str | int], info: FieldInfo | None
) -> tuple[str, str | None]:
    """The reason and fix for a value of the wrong type (``kinds``: one per union member)."""
    nouns = list(dict.fromkeys(_NOUNS[k] for k in kinds))
    wanted = " or ".join(nouns)
    value = err.get("input")
    leaf = _leaf(path)
    if isinstance(value, dict | list):
        shape = "a list" if isinstance(value, list) else "a mapping"
        return f"must be {wanted}, not {shape}", f"write one value after '{leaf}:'"
    if nouns == ["true or false"]:
        return "must be true or false", f"write `{leaf}: true` or `{leaf}: false`"
    if nouns == ["text"]:
        return "must be text", f'put it in quotes: `{leaf}: "{value}"`'
    if kinds[0] == "int_from_float":
        return "must be a whole number (no decimals)", (
            f"write e.g. `{leaf}: {_example(kinds[0], info, value)}`"
        )
    if len(nouns) > 1:
        return f"must be {wanted}", None
    return f"must be {wanted}", f"write e.g. `{leaf}: {_example(kinds[0], info, value)}`"


def _missing(err: ErrorDetails, doc: LocatedYaml, path: list[str | int]) -> ConfigError:
    leaf = path[-1] if path else "value"
    line = doc.line_of(path)
    parent = _node_at(doc.data, path[:-1])
    typo = (
        close_match(leaf, list(parent))
        if isinstance(parent, dict) and isinstance(leaf, str)
        else None
    )
    if typo is not None:
        typo_line = doc.line_of([*path[:-1], typo])
        where = f" (line {typo_line})" if typo_line is not None else ""
        return ConfigError(
            f"required field is missing; '{typo}'{where} looks like a misspelling of it",
            file=doc.file,
            line=line,
            field=dotted(path),
            fix=f"rename '{typo}' to '{leaf}'",
        )
    return ConfigError(
        "required field is missing",
        file=doc.file,
        line=line,
        field=dotted(path),
        fix=f"add '{leaf}: …' here",
    )


def _union_tag(err: ErrorDetails, doc: LocatedYaml, path: list[str | int]) -> ConfigError:
    """A tagged list item such as spec.tools[i]: point at its tag key, not at the item."""
    ctx = err.get("ctx") or {}
    tag = str(ctx.get("discriminator", "type")).strip("'\"")
    tag_path = [*path, tag]
    expected = str(ctx.get("expected_tags", "")).replace("'", "")
    if err["type"] == "union_tag_not_found":
        return ConfigError(
            "required field is missing",
            file=doc.file,
            line=doc.line_of(tag_path),
            field=dotted(tag_path),
            allowed=expected or None,
            fix=f"add '{tag}: …' here",
        )
    return ConfigError(
        "invalid value",
        file=doc.file,
        line=doc.line_of(tag_path),
        field=dotted(tag_path),
        value=ctx.get("tag"),
        allowed=expected or None,
        fix=did_you_mean(ctx.get("tag"), expected.split(", ")),
    )


def to_config_error(
    err: ErrorDetails,
    doc: LocatedYaml,
    model: type[BaseModel] | None = None,
    kinds: list[str] | None = None,
) -> ConfigError:
    """One pydantic error as a ConfigError (see module docstring).

    ``model``: the document's model, to find the field's default and bounds for examples;
    ``kinds``: the error kinds pydantic gave for this same field (one per member of a union
    such as ``str | int``), said together as ``must be text or a whole number``.
    """
    path = field_path(err["loc"], doc.data)
    field = dotted(path)
    line = doc.line_of(path)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    info = _field_info(model, err["loc"]) if model is not None else None

    def error(reason: str, *, shown: object = value, **more: Any) -> ConfigError:
        return ConfigError(reason, file=doc.file, line=line, field=field, value=shown, **more)

    if kind == "missing":
        return _missing(err, doc, path)
    if kind in {"literal_error", "enum"}:
        expected = str(ctx.get("expected", "")).replace("'", "")
        choices = [c.strip() for c in expected.replace(" or ", ", ").split(",")]
        close = did_you_mean(value, choices) if len(choices) > 1 else None  # else: allowed
        return error("invalid value", allowed=expected, fix=close)
    if kind in _NOUNS:
        reason, fix = _wrong_type(kinds or [kind], err, path, info)
        shown = None if isinstance(value, dict | list) else value
        return error(reason, shown=shown, fix=fix)
    if kind in _BOUNDS:
        return error(f"must be {_BOUNDS[kind]} {next(iter(ctx.values()), None)}")
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return error("must not be empty")
    if kind in {"string_too_short", "string_too_long"}:
        words = "at least" if kind == "string_too_short" else "at most"
        limit = ctx.get("min_length", ctx.get("max_length"))
        return error(f"must be {words} {limit} characters long")
    if kind in {"too_short", "too_long"}:
        words = "at least" if kind == "too_short" else "at most"
        limit = ctx.get("min_length", ctx.get("max_length"))
        return error(f"must have {words} {limit} items", shown=None)
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        allowed = _PATTERNS.get(pattern, f"text matching {pattern}")
        return error("is not a valid name here", allowed=allowed)
    if kind in {"union_tag_invalid", "union_tag_not_found"}:
        return _union_tag(err, doc, path)
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        if value is None:
            return error(
                "is empty but must be a mapping of keys to values",
                fix="indent its keys under it (or delete the line if the section is optional)",
            )
        shown = type(value).__name__ if isinstance(value, list) else value
        return error("must be a mapping of keys to values", shown=shown)
    if kind in {"list_type", "tuple_type", "set_type"}:
        shown = type(value).__name__ if isinstance(value, dict) else value
        return error("must be a list ('- item' lines)", shown=shown)
    if kind == "extra_forbidden":
        parent = _field_info(model, err["loc"][:-1]) if model is not None else None
        known = _field_names(parent.annotation if parent is not None else model)
        return error(
            "unknown field",
            shown=None,
            allowed=", ".join(known) or None,
            fix=did_you_mean(_leaf(path), known),
        )
    message = err["msg"]  # our validators' own words (ValueError), or a kind not seen yet
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return error(message, shown=value if not isinstance(value, dict | list) else None)


def _field_names(tp: Any) -> list[str]:
    tp = _strip(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return sorted((f.alias or n) for n, f in tp.model_fields.items())
    return []
