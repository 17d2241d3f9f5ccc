"""``duragent doctor`` checks the PostgreSQL store: reachable, and at the schema version known."""

from __future__ import annotations

import pytest

from duragent.cli.doctor_store import store_findings
from duragent.cli.findings import Level
from duragent.config import StoreConfig

postgres_db = pytest.importorskip("tests.store.postgres_db")


def test_the_file_store_needs_no_database_check() -> None:
    assert store_findings(StoreConfig()) == []


def test_a_migrated_schema_is_reported_ok_and_an_unmigrated_one_says_how_to_migrate() -> None:
    from duragent.store.postgres import migrate

    with postgres_db.fresh_schema() as schema:
        config = StoreConfig(backend="postgres", dsn=postgres_db.DSN, schema=schema)
        [fresh] = store_findings(config)
        assert fresh.level is Level.WARNING
        assert "duragent store migrate" in (fresh.fix or "")
        with postgres_db.database(schema) as db:
            db.open()
            migrate(db)
        [ok] = store_findings(config)
        assert ok.level is Level.OK
        assert f"schema {schema} reachable, schema version 3" in ok.message


def test_an_unreachable_dsn_is_an_error_without_the_password() -> None:
    config = StoreConfig(backend="postgres", dsn="postgresql://u:hidden-pw-9@127.0.0.1:1/db")
    [finding] = store_findings(config)
    assert finding.level is Level.ERROR
    assert "127.0.0.1:1/db" in finding.message
    assert "hidden-pw-9" not in finding.message + (finding.fix or "")
