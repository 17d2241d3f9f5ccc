"""The runtime's store is the one duragent.yaml selects; the DSN's password never reaches a log."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config import StoreConfig
from duragent.observability.redact import redact_secrets
from duragent.store import SessionStore
from duragent.store.backends import default_node_id, session_storage


def test_files_are_selected_by_default(tmp_path: Path) -> None:
    assert isinstance(session_storage(StoreConfig(), tmp_path), SessionStore)


def test_postgres_is_selected_and_its_password_is_redacted_from_logs(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    from duragent.store.postgres import PostgresSessionStore

    config = StoreConfig(
        backend="postgres", dsn="postgresql://app:tops3cret-pw@127.0.0.1:1/db", schema="ws1"
    )
    store = session_storage(config, tmp_path)  # not opened: nothing is connected yet
    assert isinstance(store, PostgresSessionStore)
    assert (store.db.schema, store.node_id) == ("ws1", default_node_id())
    assert "tops3cret-pw" not in store.db.where
    assert redact_secrets().scrub("dsn postgresql://app:tops3cret-pw@x") == (
        "dsn postgresql://app:<redacted>@x"
    )
