"""``store:`` in duragent.yaml: files by default, PostgreSQL when asked, errors that say the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config import load_workspace
from duragent.errors import ConfigError


def load(tmp_path: Path, text: str):
    path = tmp_path / "duragent.yaml"
    path.write_text(text)
    return load_workspace(path)


def test_the_file_store_is_the_default(tmp_path: Path) -> None:
    assert load(tmp_path, "").config.store.backend == "file"


def test_postgres_takes_its_dsn_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:pw-long-enough@db:5432/prod")
    loaded = load(tmp_path, "store:\n  backend: postgres\n  dsn: ${DATABASE_URL}\n")
    store = loaded.config.store
    assert (store.backend, store.dsn, store.db_schema) == (
        "postgres",
        "postgresql://app:pw-long-enough@db:5432/prod",
        "public",
    )
    assert loaded.warnings == ()


def test_postgres_without_a_dsn_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"store.*needs store\.dsn.*DATABASE_URL"):
        load(tmp_path, "store:\n  backend: postgres\n")


def test_an_unknown_backend_is_refused_naming_the_allowed_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"store\.backend.*got 'sqlite'; allowed: file or postgres"
    ):
        load(tmp_path, "store:\n  backend: sqlite\n")


def test_a_schema_that_is_not_a_plain_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"store\.schema"):
        load(tmp_path, "store:\n  backend: postgres\n  dsn: x\n  schema: Bad-Name\n")
