"""The fixtures of the PostgreSQL store's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from duragent.store.postgres import Database


@pytest.fixture
def db() -> Iterator[Database]:
    """An open ``Database`` on a fresh, migrated schema (dropped afterwards)."""
    postgres_db = pytest.importorskip("tests.store.postgres_db")
    from duragent.store.postgres import migrate

    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as opened:
        opened.open()
        migrate(opened)
        yield opened
