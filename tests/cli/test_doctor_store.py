"""``duragent doctor`` checks the PostgreSQL store: reachable, and at the schema version known."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from duragent.cli.doctor_store import store_findings
from duragent.cli.findings import Finding, Level
from duragent.config import StoreConfig

postgres_db = pytest.importorskip("tests.store.postgres_db")


def test_the_file_store_needs_no_database_check() -> None:
    assert store_findings(StoreConfig()) == []


def test_a_migrated_schema_is_reported_ok_and_an_unmigrated_one_says_how_to_migrate() -> None:
    from duragent.store.postgres import migrate
    from duragent.store.postgres.schema import known_migrations

    with postgres_db.fresh_schema() as schema:
        config = StoreConfig(backend="postgres", dsn=postgres_db.DSN, schema=schema)
        [fresh, _] = store_findings(config)
        assert fresh.level is Level.WARNING
        assert "duragent store migrate" in (fresh.fix or "")
        with postgres_db.database(schema) as db:
            db.open()
            migrate(db)
        [ok, _] = store_findings(config)
        assert ok.level is Level.OK
        version = known_migrations()[-1].version
        assert f"schema {schema} reachable, schema version {version}" in ok.message


def test_an_unreachable_dsn_is_an_error_without_the_password() -> None:
    config = StoreConfig(backend="postgres", dsn="postgresql://u:hidden-pw-9@127.0.0.1:1/db")
    [finding] = store_findings(config)
    assert finding.level is Level.ERROR
    assert "127.0.0.1:1/db" in finding.message
    assert "hidden-pw-9" not in finding.message + (finding.fix or "")


def _clock(config: StoreConfig, shift: float = 0.0) -> Finding:
    """The clock finding of ``config`` when this node's clock is ``shift`` seconds off."""
    found = store_findings(config, clock=lambda: time.time() + shift)
    [clock] = [f for f in found if f.check == "clock"]
    return clock


def test_a_clock_in_step_with_the_database_is_reported_ok_with_its_skew() -> None:
    with postgres_db.fresh_schema() as schema:
        clock = _clock(StoreConfig(backend="postgres", dsn=postgres_db.DSN, schema=schema))
    assert clock.level is Level.OK
    assert "this node's clock is" in clock.message
    assert "the database server's" in clock.message


def test_a_clock_a_second_off_is_a_warning_that_says_why_it_matters() -> None:
    with postgres_db.fresh_schema() as schema:
        config = StoreConfig(backend="postgres", dsn=postgres_db.DSN, schema=schema)
        ahead = _clock(config, shift=+1.0)
        behind = _clock(config, shift=-1.0)
    assert ahead.level is Level.WARNING
    assert "ahead of the database server's" in ahead.message
    assert behind.level is Level.WARNING
    assert "behind the database server's" in behind.message
    assert "NTP" in (ahead.fix or "")
    assert "Leases use the database's clock" in (ahead.fix or "")


def test_a_clock_many_seconds_off_is_an_error() -> None:
    with postgres_db.fresh_schema() as schema:
        config = StoreConfig(backend="postgres", dsn=postgres_db.DSN, schema=schema)
        assert _clock(config, shift=-30.0).level is Level.ERROR


def test_with_postgres_doctor_checks_the_databases_schedules_and_names_files_it_ignores(
    tmp_path: Path,
) -> None:
    from duragent.store.postgres import PostgresSchedules, migrate
    from tests.cli.test_doctor_files import doctor, line_with, workspace, write_schedule

    with postgres_db.fresh_schema() as schema:
        with postgres_db.database(schema) as db:
            db.open()
            migrate(db)
            stored = PostgresSchedules(db)
            daily = {"id": "daily", "agent": "helper", "schedule": {"cron": {"expr": "0 9 * * *"}},
                     "payload": {"message": {"message": "hi"}}}  # fmt: skip
            stored.put("daily", daily)
            stored.put("orphan", daily | {"id": "orphan", "agent": "ghost"})
        store = f"store: {{backend: postgres, dsn: '{postgres_db.DSN}', schema: {schema}}}\n"
        config = workspace(tmp_path, store)
        left = write_schedule(tmp_path, "old.yaml", "id: old\n")
        code, lines = doctor(config)
    assert code == 1, lines
    assert "✓ [schedules] <database>/schedules/daily: active, agent helper" in "\n".join(lines)
    assert line_with(lines, "<database>/schedules/orphan").startswith(
        "✗ [schedules] <database>/schedules/orphan: agent: names agent 'ghost'"
    )
    ignored = line_with(lines, str(left))
    assert ignored.startswith(f"! [schedules] {left}: not read: store.backend is postgres")
    assert "duragent store copy --from file --to postgres" in "\n".join(lines)  # its fix
