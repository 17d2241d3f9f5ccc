"""The exception tree drawn in ``duragent.errors`` is the true one, so it cannot go stale.

Every exception class of the package is imported and looked up in the drawing: a
``DuragentError`` must be drawn under its real parent with its Python bases in parentheses;
any other exception must be named in the paragraph on those outside the tree.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import duragent
import duragent.errors
from duragent.errors import DuragentError

DOC = duragent.errors.__doc__ or ""
NODE = re.compile(r"^(?P<indent>(?:[│ ]   )*)(?:[├└]── )?(?P<name>\w+)(?: \((?P<py>\w+)\))?")


def exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(duragent.__path__, "duragent."):
        if info.name == "duragent.__main__":  # running it starts the CLI
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return list(found.values())


def drawn_tree() -> dict[str, tuple[str | None, str | None]]:
    """Each drawn class → (its parent in the drawing, the Python base in parentheses)."""
    block = DOC.split("::", 1)[1].strip("\n").split("\n\n", 1)[0]
    tree: dict[str, tuple[str | None, str | None]] = {}
    path: list[str] = []
    for raw in block.splitlines():
        line = raw.removeprefix("    ")
        if line != "DuragentError" and "── " not in line:
            continue  # a description carried on to the next line
        match = NODE.match(line)
        assert match, line
        depth = len(match["indent"]) // 4 + (1 if "── " in line else 0)
        path[depth:] = [match["name"]]
        tree[match["name"]] = (path[depth - 1] if depth else None, match["py"])
    return tree


CLASSES = exception_classes()
TREE = drawn_tree()


def test_the_walk_finds_the_classes_defined_outside_errors_py() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"SessionNotFoundError", "WorkspaceBusyError", "ProblemError"} <= names
    assert len(names) == len(CLASSES), "two exception classes share a name"


def test_the_drawing_has_no_class_that_does_not_exist() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert set(TREE) - names == set()


@pytest.mark.parametrize(
    "cls", [c for c in CLASSES if issubclass(c, DuragentError)], ids=lambda c: c.__name__
)
def test_each_duragent_error_is_drawn_under_its_parent(cls: type[DuragentError]) -> None:
    assert cls.__name__ in TREE, f"draw {cls.__name__} in the tree of duragent/errors.py"
    ours = [b.__name__ for b in cls.__bases__ if issubclass(b, DuragentError)]
    python = [
        b.__name__ for b in cls.__bases__ if not issubclass(b, DuragentError) and b is not Exception
    ]
    parent, py_base = TREE[cls.__name__]
    assert ([parent] if parent else []) == ours
    assert ([py_base] if py_base else []) == python


@pytest.mark.parametrize(
    "cls", [c for c in CLASSES if not issubclass(c, DuragentError)], ids=lambda c: c.__name__
)
def test_each_other_exception_is_named_as_outside_the_tree(cls: type[BaseException]) -> None:
    outside = DOC.split("Outside the tree", 1)[1]
    assert f"``{cls.__name__}``" in outside
