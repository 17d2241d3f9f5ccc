"""Reply previews recorded in PostgreSQL: every node finds what any node recorded."""

from __future__ import annotations

from duragent.store.postgres import Database
from duragent.store.postgres.previews import PostgresPreviewRows


def test_a_preview_one_node_recorded_is_found_by_another_until_it_is_dropped(
    db: Database,
) -> None:
    a, b = PostgresPreviewRows(db, "a"), PostgresPreviewRows(db, "b")
    a.save("telegram", "42", "7", "s1")
    a.save("telegram", "42", "9", "s1")
    a.save("discord", "42", "7", "s2")  # another gateway's
    assert b.load("telegram") == [("42", "7", "s1"), ("42", "9", "s1")]
    b.drop("telegram", "42", "7")
    assert a.load("telegram") == [("42", "9", "s1")]
    assert a.load("discord") == [("42", "7", "s2")]


def test_saving_a_preview_again_keeps_one_record(db: Database) -> None:
    rows = PostgresPreviewRows(db, "a")
    rows.save("telegram", "42", "7", "s1")
    rows.save("telegram", "42", "7", "s1")  # a retried save
    assert rows.load("telegram") == [("42", "7", "s1")]
