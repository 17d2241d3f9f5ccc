"""``bench`` is a package: its benchmarks run as ``python -m bench.<name>`` from the project root.

Issue 35 found a flat folder of 41 scripts, 18 of them inserting folders into ``sys.path`` so
that they could import each other and ``tests``, campaign code copied from ``tests/``, and
classes of one name in several files. Now every folder is a package, every module imports by
its full name, nothing edits ``sys.path``, and a class name is defined once.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections import Counter
from pathlib import Path

import pytest

import bench

BENCH = Path(bench.__file__).resolve().parent


def sources() -> list[Path]:
    return sorted(BENCH.rglob("*.py"))


def module_names() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(bench.__path__, "bench."))


def test_every_folder_of_bench_is_a_package() -> None:
    folders = {p.parent for p in sources()}
    assert len(folders) > 1
    assert [f for f in folders if not (f / "__init__.py").is_file()] == []


def test_nothing_in_bench_edits_sys_path() -> None:
    assert [p.relative_to(BENCH) for p in sources() if "sys.path" in p.read_text()] == []


def test_no_class_name_is_defined_twice_in_bench() -> None:
    names: Counter[str] = Counter()
    for path in sources():
        tree = ast.parse(path.read_text(), str(path))
        names.update(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    assert names
    assert [name for name, count in names.items() if count > 1] == []


@pytest.mark.parametrize("name", module_names())
def test_every_module_of_bench_imports_by_its_full_name(name: str) -> None:
    assert importlib.import_module(name).__name__ == name


def test_the_simulated_year_runs_as_its_package() -> None:
    assert "bench.year.__main__" in module_names()
