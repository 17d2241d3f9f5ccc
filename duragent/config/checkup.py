"""Every problem of a configuration file in one run, for ``duragent doctor``.

``load_workspace`` and ``load_agent`` refuse a file at its first failing stage, which is
right for ``serve``; ``doctor`` reported in rounds that way: an unset ``${VAR}`` hid every
type error, and a type error hid the unknown fields (issue 39). Here each stage goes on past
its problems:

- an unset ``${VAR}`` is one problem, and stands in as ``‹unset VAR›`` (``is_stand_in``), so
  the rest of the file is still read as if it were set;
- a field that fails validation is one problem, and is left out for the checks after it
  (``validate_all``), so unknown fields and names are still looked at.

A problem that only follows from an unset variable (the same line failing validation) is not
said twice.
"""

from __future__ import annotations

import os
import re
from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.config.envvars import expand_env
from duragent.config.validation import validate_all
from duragent.config.wording import dotted
from duragent.config.workspace import (
    CONFIG_FILENAME,
    LoadedWorkspace,
    WorkspaceConfig,
    load_workspace,
    workspace_paths,
    workspace_warnings,
)
from duragent.config.yamlio import LocatedYaml, load_yaml_text, read_text
from duragent.errors import ConfigError

__all__ = [
    "Expanded",
    "WorkspaceCheck",
    "by_line",
    "check_workspace",
    "expand_all",
    "is_stand_in",
    "parse_all",
]

_REQUIRED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STAND_IN = "\u2039unset {}\u203a"
_STAND_IN_NAME = re.compile("\u2039unset ([A-Za-z0-9_]+)\u203a")


def is_stand_in(value: object) -> bool:
    """Whether ``value`` was filled in for an unset variable (checks of it would mislead)."""
    return isinstance(value, str) and "\u2039unset " in value


@dataclass(frozen=True, slots=True)
class Expanded:
    """A file's text with its variables expanded, and every variable that is not set."""

    text: str | None
    """None when a reference cannot be read (an unclosed ``${``): nothing more is checked."""
    problems: tuple[ConfigError, ...]

    @property
    def lines(self) -> frozenset[int]:
        """The lines of the problems: anything else wrong there follows from them."""
        return frozenset(p.line for p in self.problems if p.line is not None)

    def independent(self, found: Iterable[ConfigError]) -> list[ConfigError]:
        """``found`` without what is on a line of a problem (it follows from the problem)."""
        lines = self.lines
        return [e for e in found if e.line is None or e.line not in lines]


def expand_all(
    text: str, *, file: Path | str | None = None, env: Mapping[str, str] | None = None
) -> Expanded:
    """``expand_env``, going on past each unset variable (a stand-in takes its place)."""
    environ = os.environ if env is None else env
    stand_ins: dict[str, str] = {}
    problems: list[ConfigError] = []
    lines = text.split("\n")
    while True:
        try:
            expanded = expand_env(text, file=file, env=ChainMap(stand_ins, dict(environ)))
        except ConfigError as exc:
            on_line = lines[exc.line - 1] if exc.line and exc.line <= len(lines) else ""
            names = [
                name
                for name in (*_REQUIRED.findall(on_line), *_REQUIRED.findall(text))
                if name not in environ and name not in stand_ins
            ]
            if not names:  # not an unset variable: a reference that cannot be read
                return Expanded(None, (*problems, exc))
            if all((p.line, p.reason) != (exc.line, exc.reason) for p in problems):
                problems.append(exc)
            stand_ins[names[0]] = _STAND_IN.format(names[0])
            continue
        return Expanded(expanded, tuple(problems))


def parse_all(
    text: str, *, file: Path, env: Mapping[str, str] | None = None
) -> tuple[LocatedYaml | None, Expanded, list[ConfigError]]:
    """The document (None when it cannot be parsed), its expansion, and what stopped it."""
    expanded = expand_all(text, file=file, env=env)
    if expanded.text is None:
        return None, expanded, []
    try:
        doc = load_yaml_text(expanded.text, file=file)
    except ConfigError as exc:
        return None, expanded, expanded.independent([exc])
    if expanded.problems:
        expanded = Expanded(expanded.text, tuple(_named(expanded.problems, doc)))
    return doc, expanded, []


def _named(problems: Iterable[ConfigError], doc: LocatedYaml) -> Iterator[ConfigError]:
    """Each unset variable's problem with the field it fills (``spec.model.base_url``)."""
    filled = [path for path, value in _values(doc.data, ()) if is_stand_in(value)]
    for problem in problems:
        on_line = [path for path in filled if doc.line_of(path) == problem.line]
        if len(on_line) > 1:  # several on one line (a flow mapping): the one of this name
            on_line = [p for p in on_line if _name_in(_value_at(doc.data, p), problem.reason)]
        if not on_line or problem.field:
            yield problem
            continue
        yield ConfigError(
            problem.reason,
            file=problem.file,
            line=problem.line,
            field=dotted(on_line[0]),
            fix=problem.fix,
        )


def _values(data: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _values(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _values(value, (*path, i))
    else:
        yield path, data


def _value_at(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _name_in(value: object, reason: str) -> bool:
    """Whether the stand-in in ``value`` is for the variable ``reason`` names."""
    return any(f" {name} " in reason for name in _STAND_IN_NAME.findall(str(value)))


def by_line(errors: Iterable[ConfigError]) -> list[ConfigError]:
    """``errors`` in the order of their lines (people read a file top to bottom)."""
    return sorted(errors, key=lambda e: e.line if e.line is not None else 0)


@dataclass(frozen=True, slots=True)
class WorkspaceCheck:
    """``duragent.yaml`` as ``doctor`` sees it: what it can load, and every problem."""

    loaded: LoadedWorkspace | None
    """The workspace without the fields that failed (their defaults instead); None when the
    file cannot be read or parsed as a whole."""
    errors: tuple[ConfigError, ...]
    warnings: tuple[ConfigError, ...]
    doc: LocatedYaml | None = None
    """What ``loaded`` was made of, to find the line of a field."""


def check_workspace(config_file: Path | str) -> WorkspaceCheck:
    """Every problem of ``duragent.yaml`` in one pass (a missing file: all defaults)."""
    path = Path(config_file).expanduser().absolute()
    if path.is_dir():
        path = path / CONFIG_FILENAME
    if not path.is_file():
        return WorkspaceCheck(load_workspace(path), (), ())
    try:
        text = read_text(path)
    except ConfigError as exc:
        return WorkspaceCheck(None, (exc,), ())
    doc, expanded, stopped = parse_all(text, file=path)
    if doc is None:
        return WorkspaceCheck(None, tuple(by_line([*expanded.problems, *stopped])), ())
    config, invalid, rest = validate_all(WorkspaceConfig, doc, what="duragent.yaml")
    errors = tuple(by_line([*expanded.problems, *expanded.independent(invalid)]))
    if config is None:
        return WorkspaceCheck(None, errors, ())
    warnings = tuple(expanded.independent(workspace_warnings(config, rest)))
    loaded = LoadedWorkspace(config, workspace_paths(config, path), warnings, exists=True)
    return WorkspaceCheck(loaded, errors, warnings, rest)
