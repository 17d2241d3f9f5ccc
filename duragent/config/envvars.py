"""``${VAR}`` expansion in configuration text, with the reference's rules.

- ``${VAR}`` is required: an unset variable is an error naming the variable and the line.
- ``${VAR:-default}`` uses ``default`` (possibly empty) when VAR is unset or empty.
- ``$$`` is a literal ``$``; a lone ``$`` not followed by ``{`` is kept as is.
- ``${`` without a closing ``}`` is an error; nesting is not supported.
- Lines whose first non-blank character is ``#`` are comments and are not expanded, so a
  commented-out example never fails on a missing variable.

A command that does not use every field (``agent create`` needs paths, not the Telegram
token) passes ``unset``: a required variable that is not set is then listed there instead of
raised, and expands to nothing; the caller decides which of those it needs
(``config.env_scope``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from duragent.errors import ConfigError

__all__ = ["expand_env"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_LINE_BREAK = re.compile(r"(?<=[\n\x85\u2028\u2029])|(?<=\r)(?!\n)")
"""Zero-width split points after the line breaks YAML counts (``str.splitlines`` also splits
on form feed and other separators, which shifted error line numbers and could turn the rest
of a line into a "comment")."""


def expand_env(
    text: str,
    *,
    file: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    unset: list[ConfigError] | None = None,
) -> str:
    """Return ``text`` with every ``${VAR}`` reference replaced (see module docstring).

    Args:
        text: the configuration text.
        file: named in errors.
        env: the variables (default: the process environment).
        unset: when given, a required variable that is not set is appended here (the error
            it would raise, with its line) and expands to the empty string.
    """
    environ = os.environ if env is None else env
    out: list[str] = []
    for lineno, line in enumerate(_LINE_BREAK.split(text), start=1):
        if line.lstrip().startswith("#") or "$" not in line:
            out.append(line)
            continue
        out.append(_expand_line(line, lineno, file, environ, unset))
    return "".join(out)


def _expand_line(
    line: str,
    lineno: int,
    file: Path | str | None,
    env: Mapping[str, str],
    unset: list[ConfigError] | None,
) -> str:
    result: list[str] = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch != "$":
            result.append(ch)
            i += 1
            continue
        nxt = line[i + 1 : i + 2]
        if nxt == "$":
            result.append("$")
            i += 2
            continue
        if nxt != "{":
            result.append("$")
            i += 1
            continue
        end = line.find("}", i + 2)
        if end < 0:
            raise ConfigError(
                "unclosed '${' in variable reference",
                file=file,
                line=lineno,
                value=line.strip(),
                fix="close it with '}' or write '$$' for a literal dollar sign",
            )
        body = line[i + 2 : end]
        name, sep, default = body.partition(":-")
        if not _NAME.match(name):
            raise ConfigError(
                "invalid environment variable name",
                file=file,
                line=lineno,
                value=name,
                allowed="letters, digits and '_', not starting with a digit",
            )
        value = env.get(name)
        if sep:
            result.append(value if value else default)
        elif value is None:
            error = ConfigError(
                f"environment variable {name} is not set",
                file=file,
                line=lineno,
                fix=f"export {name}=… or write ${{{name}:-default}}",
            )
            if unset is None:
                raise error
            unset.append(error)
        else:
            result.append(value)
        i = end + 1
    return "".join(result)
