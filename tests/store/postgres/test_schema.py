"""Numbered migrations: applied once, recorded, and a newer schema is refused by name."""

from __future__ import annotations

import threading

import pytest

from duragent.store.postgres import SchemaTooNewError, current_version, migrate
from duragent.store.postgres.schema import known_migrations
from tests.store import postgres_db


def test_migrations_are_applied_once_and_recorded() -> None:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        db.open()
        assert current_version(db) == 0
        applied = migrate(db)
        assert [m.version for m in applied] == [m.version for m in known_migrations()]
        assert current_version(db) == known_migrations()[-1].version
        assert migrate(db) == []  # a second start applies nothing


def test_nodes_starting_at_once_apply_each_migration_once() -> None:
    with postgres_db.fresh_schema() as schema:
        results: list[int] = []
        errors: list[BaseException] = []

        def start() -> None:
            try:
                with postgres_db.database(schema) as db:
                    db.open()
                    results.append(len(migrate(db)))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=start) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sum(results) == len(known_migrations())  # each once, by whichever node


def test_a_schema_newer_than_the_code_is_refused_naming_both_versions() -> None:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        db.open()
        migrate(db)
        known = known_migrations()[-1].version
        with db.transaction("test") as conn:
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, 'from_the_future')",
                (known + 5,),
            )
        with pytest.raises(SchemaTooNewError, match=rf"version {known + 5}.*up to {known}"):
            migrate(db)


def test_a_schema_name_that_is_not_plain_is_refused() -> None:
    from duragent.errors import ConfigError
    from duragent.store.postgres import Database

    with pytest.raises(ConfigError, match=r"store\.schema"):
        Database(postgres_db.DSN, schema="x; DROP TABLE y")


def test_a_database_at_an_older_version_gets_only_the_newer_migrations() -> None:
    first = known_migrations()[0]
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        db.open()
        with db.transaction("test") as conn:  # what an older duragent left behind
            conn.execute(f"CREATE SCHEMA {schema}".encode())
            conn.execute(
                "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.execute(first.sql.encode())
            conn.execute("INSERT INTO schema_version VALUES (1, %s)", (first.name,))
        applied = migrate(db)
        assert [m.version for m in applied] == [m.version for m in known_migrations()[1:]]
        assert current_version(db) == known_migrations()[-1].version
