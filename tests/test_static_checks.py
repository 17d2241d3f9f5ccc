"""The code-quality gates run as part of the test suite, so CI cannot skip them.

ruff (lint + format), mypy --strict on the package and bench/, mypy on tests/ (not strict: see the
``tests.*`` override in pyproject.toml), and import-linter's contracts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "cmd",
    [
        ("ruff", "check", "duragent", "tests", "bench"),
        ("ruff", "format", "--check", "duragent", "tests", "bench"),
        ("mypy",),
        ("mypy", "bench"),
        ("mypy", "tests"),
        ("lint-imports",),
    ],
    ids=[
        "ruff-lint",
        "ruff-format",
        "mypy-strict",
        "mypy-strict-bench",
        "mypy-tests",
        "import-layers",
    ],
)
def test_the_code_passes(cmd: tuple[str, ...]) -> None:
    result = run(str(BIN / cmd[0]), *cmd[1:])
    assert result.returncode == 0, result.stdout + result.stderr
