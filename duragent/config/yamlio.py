"""Reading YAML written by people, with line numbers for every error.

Config and agent files are parsed with PyYAML's C loader (fast) and also composed into a node
tree so that a validation error on ``spec.session.context.max_tool_result_tokens`` can point
at the exact line where that key sits. Files the runtime rewrites (policies, schedules) use
ruamel.yaml elsewhere; this module only reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from duragent.core.nesting import MAX_NESTING_DEPTH, yaml_too_deep
from duragent.errors import ConfigError

__all__ = ["LocatedYaml", "load_yaml_text", "read_text"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's C loader when the wheel has it (about 4x faster), else the pure one."""


@dataclass(frozen=True, slots=True)
class LocatedYaml:
    """Parsed YAML plus the node tree used to find the line of any key path."""

    data: Any
    root: yaml.Node | None
    file: Path | None

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """1-based line of the deepest node of ``path`` that exists, or None."""
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for key in path:
            if isinstance(node, yaml.MappingNode):
                match = None
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                        match = (k, v)
                        break
                if match is None:
                    return line
                line = match[0].start_mark.line + 1
                node = match[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                if key >= len(node.value):
                    return line
                node = node.value[key]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def paths_on(self, line: int) -> list[tuple[str | int, ...]]:
        """The key paths of the values (and keys) written on 1-based ``line``.

        A block scalar counts for every line it spans. Used to tell which fields a
        ``${VAR}`` on that line fills.
        """
        found: dict[tuple[str | int, ...], None] = {}  # an ordered set: a key and its value

        def spans(node: yaml.Node) -> bool:
            return (
                node.start_mark.line + 1
                <= line
                <= max(node.start_mark.line + 1, node.end_mark.line + (node.end_mark.column > 0))
            )

        def walk(node: yaml.Node, path: tuple[str | int, ...]) -> None:
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    key = (*path, k.value if isinstance(k, yaml.ScalarNode) else "?")
                    if spans(k):
                        found[key] = None
                    walk(v, key)
            elif isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    walk(item, (*path, i))
            elif spans(node):
                found[path] = None

        if self.root is not None:
            walk(self.root, ())
        return list(found)


def read_text(path: Path) -> str:
    """Read a UTF-8 file, turning OS and decoding errors into ConfigError."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", file=path) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 ({exc.reason})", file=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror}", file=path) from None


def load_yaml_text(text: str, *, file: Path | None = None) -> LocatedYaml:
    """Parse YAML text; syntax errors become ConfigError with the parser's line number.

    Nesting deeper than ``MAX_NESTING_DEPTH`` is refused *before* parsing: libyaml's composer
    recurses in C and a 100 KB file of brackets kills the process with SIGSEGV.
    """
    deep = yaml_too_deep(text)
    if deep is not None:
        raise ConfigError(
            deep.reason(MAX_NESTING_DEPTH),
            file=file,
            line=deep.line,
            fix="flatten the structure; real configuration nests a few levels",
        )
    try:
        root = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or "invalid YAML"
        raise ConfigError(
            f"YAML syntax error: {problem}",
            file=file,
            line=line,
            fix="check indentation and quoting around this line",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML error: {exc}", file=file) from None
    return LocatedYaml(data=data, root=root, file=file)
