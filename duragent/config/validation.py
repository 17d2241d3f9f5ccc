"""Turn pydantic validation failures into errors a person can act on.

Every error names the file, the line (from the YAML node tree), the dotted field path as
written in the file, the value found and, for enums, the values allowed. Unknown keys are
not errors (the reference ignores them, and newer files must load in older runtimes) but
they are reported as warnings, because a typo such as ``max_tool_iteration`` would otherwise
be silently ignored.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from duragent.config.yamlio import LocatedYaml
from duragent.errors import ConfigError, ConfigErrors

__all__ = ["empty_means_default", "unknown_key_warnings", "validate_document"]

M = TypeVar("M", bound=BaseModel)

_MISSING = object()


def empty_means_default(model: type[BaseModel], data: Any) -> Any:
    """``data`` without the keys written with no value whose field has a non-empty default.

    A section left with only commented-out lines (``world_memory:`` then ``# path: …``) is
    YAML ``null``; the reference's own configuration guide writes such sections, and a person
    means "the defaults". Only sections and lists (fields defaulting to a model, a list or a
    mapping) are affected: a field whose default is ``None`` keeps ``null`` (``memory:`` off),
    and an empty scalar (``port:``) is still an error, since no one leaves a number blank on
    purpose. Used as a ``model_validator(mode="before")`` by the config models.
    """
    if not isinstance(data, dict) or None not in data.values():
        return data
    fields = model.model_fields
    by_key = {(info.alias or name): info for name, info in fields.items()}
    by_key.update(fields)
    kept = {}
    for key, value in data.items():
        info = by_key.get(key) if isinstance(key, str) else None
        if value is None and info is not None and _container_default(info.default):
            continue
        kept[key] = value
    return kept


def _container_default(default: Any) -> bool:
    return isinstance(default, BaseModel | list | dict | tuple)


def validate_document(model: type[M], doc: LocatedYaml, *, what: str) -> M:
    """Validate ``doc.data`` as ``model``; raise ConfigErrors listing every problem by line."""
    data = doc.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{what} must be a YAML mapping of keys to values",
            file=doc.file,
            line=doc.line_of(()),
            value=type(data).__name__,
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [_to_config_error(e, doc) for e in exc.errors()]
        # pydantic reports in field-declaration order; people read files top to bottom.
        errors.sort(key=lambda e: e.line if e.line is not None else 0)
        raise ConfigErrors(errors) from None


def _has_key(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _field_path(loc: Sequence[str | int], data: Any) -> list[str | int]:
    """The part of pydantic's ``loc`` that names keys in the file (drops union tags)."""
    path: list[str | int] = []
    node: Any = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if _has_key(node, part):
            path.append(part)
            node = node[part]
        elif last or not isinstance(node, dict):
            path.append(part)
            node = _MISSING
        # else: a union/validator tag pydantic inserted; it is not a key in the file.
    return path


def _dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _close_key(wanted: str, candidates: Sequence[object]) -> str | None:
    """The candidate that looks like a misspelling of ``wanted`` (``modle`` for ``model``)."""
    names = [c for c in candidates if isinstance(c, str) and c != wanted]
    matches = difflib.get_close_matches(wanted, names, n=1, cutoff=0.75)
    return matches[0] if matches else None


def _node_at(data: Any, path: Sequence[str | int]) -> Any:
    node = data
    for part in path:
        if not _has_key(node, part):
            return _MISSING
        node = node[part]
    return node


def _to_config_error(err: ErrorDetails, doc: LocatedYaml) -> ConfigError:
    path = _field_path(err["loc"], doc.data)
    field = _dotted(path)
    line = doc.line_of(path)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "missing":
        leaf = path[-1] if path else "value"
        parent = _node_at(doc.data, path[:-1])
        typo = (
            _close_key(leaf, list(parent))
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
                field=field,
                fix=f"rename '{typo}' to '{leaf}'",
            )
        return ConfigError(
            "required field is missing",
            file=doc.file,
            line=line,
            field=field,
            fix=f"add '{leaf}: …' here",
        )
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return ConfigError(
            "invalid value",
            file=doc.file,
            line=line,
            field=field,
            value=value,
            allowed=expected,
        )
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        bound = next(iter(ctx.values()), None)
        words = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }[kind]
        return ConfigError(
            f"must be {words} {bound}",
            file=doc.file,
            line=line,
            field=field,
            value=value,
        )
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return ConfigError("must not be empty", file=doc.file, line=line, field=field, value=value)
    if kind in {"union_tag_invalid", "union_tag_not_found"}:
        # A tagged list item such as spec.tools[i]: point at its tag key, not at the item.
        tag = str(ctx.get("discriminator", "type")).strip("'\"")
        tag_path = [*path, tag]
        expected = str(ctx.get("expected_tags", "")).replace("'", "")
        if kind == "union_tag_not_found":
            return ConfigError(
                "required field is missing",
                file=doc.file,
                line=doc.line_of(tag_path),
                field=_dotted(tag_path),
                allowed=expected or None,
                fix=f"add '{tag}: …' here",
            )
        return ConfigError(
            "invalid value",
            file=doc.file,
            line=doc.line_of(tag_path),
            field=_dotted(tag_path),
            value=ctx.get("tag"),
            allowed=expected or None,
        )
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        if value is None:
            return ConfigError(
                "is empty but must be a mapping of keys to values",
                file=doc.file,
                line=line,
                field=field,
                fix="indent its keys under it (or delete the line if the section is optional)",
            )
        return ConfigError(
            "must be a mapping of keys to values",
            file=doc.file,
            line=line,
            field=field,
            value=type(value).__name__ if isinstance(value, list) else value,
        )
    if kind == "list_type":
        return ConfigError(
            "must be a list ('- item' lines)",
            file=doc.file,
            line=line,
            field=field,
            value=type(value).__name__ if isinstance(value, dict) else value,
        )
    message = err["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    shown = value if not isinstance(value, dict | list) else None
    return ConfigError(message, file=doc.file, line=line, field=field, value=shown)


def unknown_key_warnings(
    model: BaseModel, doc: LocatedYaml, prefix: tuple[str | int, ...] = ()
) -> list[ConfigError]:
    """Warnings for keys the model does not know (likely typos), with their lines."""
    found: list[ConfigError] = []
    extra = model.model_extra or {}
    known = sorted((f.alias or name) for name, f in type(model).model_fields.items())
    for key in extra:
        path = (*prefix, key)
        close = _close_key(key, known)
        found.append(
            ConfigError(
                "unknown field (ignored)",
                file=doc.file,
                line=doc.line_of(path),
                field=_dotted(path),
                allowed=", ".join(known),
                fix=f"did you mean '{close}'?" if close else None,
            )
        )
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.extend(unknown_key_warnings(value, doc, (*prefix, key)))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    found.extend(unknown_key_warnings(item, doc, (*prefix, key, i)))
    return found
