"""Turn pydantic validation failures into errors a person can act on.

Every error names the file, the line (from the YAML node tree), the dotted field path as
written in the file, the value found and what to write (in plain words: ``wording``). Unknown
keys are not errors (the reference ignores them, and newer files must load in older runtimes)
but they are reported as warnings, because a typo such as ``max_tool_iteration`` would
otherwise be silently ignored. ``validate_all`` goes on past the fields that fail, so
``doctor`` names every problem of a file in one run.
"""

from __future__ import annotations

import copy
from typing import Any, Generic, NamedTuple, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from duragent.config.wording import close_match, dotted, field_path, to_config_error
from duragent.config.yamlio import LocatedYaml
from duragent.errors import ConfigError, ConfigErrors

__all__ = [
    "Validated",
    "empty_means_default",
    "unknown_key_warnings",
    "validate_all",
    "validate_document",
]

M = TypeVar("M", bound=BaseModel)


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
    shape = _not_a_mapping(doc, what)
    if shape is not None:
        raise shape
    instance, errors, _ = validate_all(model, doc, what=what)
    if errors:
        raise ConfigErrors(errors)
    assert instance is not None  # no error: validated
    return instance


def _not_a_mapping(doc: LocatedYaml, what: str) -> ConfigError | None:
    if doc.data is None or isinstance(doc.data, dict):
        return None
    return ConfigError(
        f"{what} must be a YAML mapping of keys to values",
        file=doc.file,
        line=doc.line_of(()),
        value=type(doc.data).__name__,
    )


_SALVAGE_ROUNDS = 8


class Validated(NamedTuple, Generic[M]):
    """``validate_all``'s result."""

    model: M | None
    """The document without the fields that failed; None when that is not enough."""
    errors: list[ConfigError]
    """Every problem of the document as written, in line order."""
    doc: LocatedYaml
    """What ``model`` was made of: the document less the fields that failed (lines intact)."""


def validate_all(model: type[M], doc: LocatedYaml, *, what: str) -> Validated[M]:
    """Every problem of ``doc`` as ``model``, and the model the rest of it makes.

    The model is validated again without the fields that failed (so they take their
    defaults, and a list item that failed is left out), so later checks (unknown fields, tool
    names) still see the rest of the file: one run says everything. It is None when the rest
    is not enough (a required section failed).
    """
    shape = _not_a_mapping(doc, what)
    if shape is not None:
        return Validated(None, [shape], doc)
    data = doc.data if doc.data is not None else {}
    try:
        return Validated(model.model_validate(data), [], doc)
    except ValidationError as exc:
        errors = _translated(exc.errors(), doc, model)
        failed = exc.errors()
    salvaged = LocatedYaml(copy.deepcopy(data), copy.deepcopy(doc.root), doc.file)
    for _ in range(_SALVAGE_ROUNDS):
        if not _drop_failed(salvaged, [field_path(e["loc"], salvaged.data) for e in failed]):
            break
        try:
            return Validated(model.model_validate(salvaged.data), errors, salvaged)
        except ValidationError as exc:
            failed = exc.errors()
    return Validated(None, errors, doc)


def _translated(
    failed: list[ErrorDetails], doc: LocatedYaml, model: type[BaseModel]
) -> list[ConfigError]:
    """One ConfigError per field, in line order (a union's members said together)."""
    by_field: dict[tuple[str | int, ...], list[ErrorDetails]] = {}
    for err in failed:
        by_field.setdefault(tuple(field_path(err["loc"], doc.data)), []).append(err)
    errors = []
    for same in by_field.values():
        kinds = [e["type"] for e in same]
        errors.append(to_config_error(same[0], doc, model, kinds if len(same) > 1 else None))
    # pydantic reports in field-declaration order; people read files top to bottom.
    errors.sort(key=lambda e: e.line if e.line is not None else 0)
    return errors


_DROP = object()


def _drop_failed(doc: LocatedYaml, paths: list[list[str | int]]) -> bool:
    """Remove what failed from ``doc``; False when nothing can be removed (the root failed).

    A value that failed is removed; a missing required field takes its section (or its list
    item) with it, as the section cannot be made without it. The node tree loses the same
    entries, so the lines of what stays are still found by its new path.
    """
    marked = False
    for path in paths:
        while path:
            parent = _node_at(doc.data, path[:-1])
            if isinstance(parent, dict | list) and _has(parent, path[-1]):
                parent[path[-1]] = _DROP  # type: ignore[index]
                _mark_node(doc.root, path)
                marked = True
                break
            path = path[:-1]  # missing here: the section holding it goes
    _sweep(doc.data)  # list items shift only now, after every path was marked
    _sweep_nodes(doc.root)
    return marked


def _node_at(data: Any, path: list[str | int]) -> Any:
    node = data
    for part in path:
        if not (isinstance(node, dict | list) and _has(node, part)):
            return None
        node = node[part]  # type: ignore[index]
    return node


def _has(node: dict[Any, Any] | list[Any], part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(part, int) and 0 <= part < len(node)


def _sweep(node: Any) -> None:
    """Take out the values marked ``_DROP``."""
    if isinstance(node, dict):
        for key in [k for k, v in node.items() if v is _DROP]:
            del node[key]
        for value in node.values():
            _sweep(value)
    elif isinstance(node, list):
        node[:] = [item for item in node if item is not _DROP]
        for item in node:
            _sweep(item)


_DROPPED_TAG = "!duragent-dropped"


def _mark_node(root: yaml.Node | None, path: list[str | int]) -> None:
    """Tag the node tree's entry at ``path`` for ``_sweep_nodes`` (as ``line_of`` finds it)."""
    node = root
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, yaml.MappingNode):
            pair = next(
                (
                    kv
                    for kv in node.value
                    if isinstance(kv[0], yaml.ScalarNode) and kv[0].value == str(part)
                ),
                None,
            )
            if pair is None:
                return
            target = pair[0] if last else pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return
            target = node.value[part]
        else:
            return
        if last:
            target.tag = _DROPPED_TAG
        node = target


def _sweep_nodes(node: yaml.Node | None) -> None:
    if isinstance(node, yaml.MappingNode):
        node.value = [(k, v) for k, v in node.value if k.tag != _DROPPED_TAG]
        for _, value in node.value:
            _sweep_nodes(value)
    elif isinstance(node, yaml.SequenceNode):
        node.value = [item for item in node.value if item.tag != _DROPPED_TAG]
        for item in node.value:
            _sweep_nodes(item)


def unknown_key_warnings(
    model: BaseModel, doc: LocatedYaml, prefix: tuple[str | int, ...] = ()
) -> list[ConfigError]:
    """Warnings for keys the model does not know (likely typos), with their lines."""
    found: list[ConfigError] = []
    extra = model.model_extra or {}
    known = sorted((f.alias or name) for name, f in type(model).model_fields.items())
    for key in extra:
        path = (*prefix, key)
        close = close_match(key, known)
        found.append(
            ConfigError(
                "unknown field (ignored)",
                file=doc.file,
                line=doc.line_of(path),
                field=dotted(path),
                allowed=", ".join(known),
                fix=f"did you mean '{close}'?"
                if close
                else "remove it, or rename it to one of the allowed fields",
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
