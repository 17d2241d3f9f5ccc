"""Where the running duragent comes from, so ``upgrade`` can say what updates it.

- **git**: the package is ``<root>/duragent`` of a source tree in a git work tree (a clone):
  ``git pull``, then ``pip install -e <root>`` again when it was installed editable (new
  dependencies and entry points). Advising ``pip install -U duragent`` there would install
  the released package over the clone the person is working in.
- **source**: a source tree that is not in git (an unpacked release): new files, then the
  editable install again.
- **pipx**: the interpreter is one of pipx's venvs.
- **pip**: anything else (site-packages).

A source tree is the directory an editable install of duragent names (pip's
``direct_url.json``, PEP 610), or the one holding the package beside a ``pyproject.toml``.
So a venv inside a clone is no clone: its site-packages has no ``pyproject.toml`` beside the
package, and no editable install names it. Only files are read (``.git`` up the tree, pip's
metadata): no ``git`` runs, nothing goes to the network.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import duragent

__all__ = ["Installation", "Kind", "find_installation"]


class Kind(enum.StrEnum):
    """How this copy was installed (see the module docstring)."""

    GIT = "git"
    SOURCE = "source"
    PIPX = "pipx"
    PIP = "pip"


@dataclass(frozen=True, slots=True)
class Installation:
    """Where the package is imported from, and what owns its files."""

    kind: Kind
    root: Path | None = None
    """The source tree (git, source)."""
    editable: bool = False
    """``pip install -e <root>``: reinstalling it brings new dependencies."""


def find_installation(
    package_dir: Path | None = None,
    *,
    prefix: str | None = None,
    distributions: Iterable[metadata.Distribution] | None = None,
) -> Installation:
    """The installation of the package in ``package_dir`` (default: the one running).

    ``prefix`` is the interpreter's (``sys.prefix``); ``distributions`` the installed
    metadata of duragent (default: what ``importlib.metadata`` finds).
    """
    package = (package_dir or Path(duragent.__file__).parent).resolve()
    dists = distributions if distributions is not None else metadata.distributions(name="duragent")
    editable = _editable_root(package, dists)
    root = editable
    if root is None and (package.parent / "pyproject.toml").is_file():
        root = package.parent
    if root is not None:
        kind = Kind.GIT if _in_git(root) else Kind.SOURCE
        return Installation(kind, root, editable=editable is not None)
    if "/pipx/venvs/" in (prefix if prefix is not None else sys.prefix).replace("\\", "/"):
        return Installation(Kind.PIPX)
    return Installation(Kind.PIP)


def _editable_root(package: Path, dists: Iterable[metadata.Distribution]) -> Path | None:
    """The directory an editable install names, when ``package`` is inside it."""
    for dist in dists:
        try:
            data = json.loads(dist.read_text("direct_url.json") or "null")
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        dir_info = data.get("dir_info")
        url = data.get("url")
        if not isinstance(dir_info, dict) or not dir_info.get("editable"):
            continue
        if not isinstance(url, str) or not url.startswith("file:"):
            continue
        root = Path(url2pathname(urlparse(url).path)).resolve()
        if package.is_relative_to(root):
            return root
    return None


def _in_git(root: Path) -> bool:
    """Whether ``root`` is in a git work tree (``.git``: a folder, or a worktree's file)."""
    return any((d / ".git").exists() for d in (root, *root.parents))
