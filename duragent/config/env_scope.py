"""Which ``${VAR}``s of ``duragent.yaml`` a command needs set.

``serve`` and ``doctor`` need them all: an unset ``${TELEGRAM_BOT_TOKEN}`` is an error there,
named with its line. A command that uses a few fields does not: ``duragent agent create``
refused to add an agent because the Telegram token was not exported in that shell (issue 39).
Such a command names the sections it reads (``needed``); a variable that is not set in any
other field is left out, that field taking its default, as if it were not written. The
workspace's paths (``workspace``, ``agents_dir``, ``services``, ``world_memory``) are always
needed: a default there would silently point at another folder.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from duragent.config.envvars import expand_env
from duragent.config.yamlio import LocatedYaml, load_yaml_text
from duragent.errors import ConfigError

__all__ = ["PATH_FIELDS", "expand_needed"]

PATH_FIELDS = ("workspace", "agents_dir", "services", "world_memory")
"""Top-level fields every command needs: where the workspace's files are."""


def _under(path: Sequence[str | int], prefixes: Collection[str]) -> bool:
    dotted = ".".join(str(p) for p in path)
    return any(dotted == p or dotted.startswith(p + ".") for p in prefixes)


def _drop(data: Any, path: Sequence[str | int]) -> None:
    """Remove the field at ``path`` from the parsed data (a list item is left as it is)."""
    node = data
    for part in path[:-1]:
        inside = isinstance(node, dict) and part in node
        inside = inside or (isinstance(node, list) and isinstance(part, int) and part < len(node))
        if not inside:
            return
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)


def expand_needed(
    text: str, *, file: Path, needed: Collection[str]
) -> tuple[LocatedYaml, tuple[ConfigError, ...]]:
    """Parse ``text`` requiring only the variables of ``needed`` fields (and the paths).

    Returns the document, without the fields whose variables are not set, and the errors
    those variables would have raised. Raises the first such error when it fills a needed
    field, or a field it cannot place, or when the text does not parse without it (a
    variable in a key): what a full load would have said.
    """
    unset: list[ConfigError] = []
    expanded = expand_env(text, file=file, unset=unset)
    if not unset:
        return load_yaml_text(expanded, file=file), ()
    try:
        doc = load_yaml_text(expanded, file=file)
    except ConfigError:
        raise unset[0] from None
    scope = (*PATH_FIELDS, *needed)
    dropped: list[tuple[str | int, ...]] = []
    for error in unset:
        paths = doc.paths_on(error.line) if error.line is not None else []
        if not paths or any(_under(p, scope) for p in paths):
            raise error
        dropped.extend(paths)
    for path in dropped:
        _drop(doc.data, path)
    return doc, tuple(unset)
