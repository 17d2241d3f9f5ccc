"""The session store ``duragent.yaml`` selects (``store.backend``): files, or PostgreSQL.

The Postgres package (and its driver) is imported only here and only when selected, so a
workspace on files never needs ``psycopg``. The DSN's password is registered with the log
redactor before anything can log it, and messages describe the database without it.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from duragent.config.store import StoreConfig
from duragent.errors import ConfigError
from duragent.observability.redact import redact_secrets
from duragent.store.cluster import Cluster, local_cluster
from duragent.store.protocols import RunLogStorage, ScheduleStorage, SessionStorage
from duragent.store.session_store import SessionStore

if TYPE_CHECKING:
    from duragent.store.postgres.sessions import PostgresSessionStore

__all__ = ["cluster_storage", "default_node_id", "schedule_storage", "session_storage"]


def default_node_id() -> str:
    """This machine's name in session leases: the host name.

    Stable across restarts on purpose: a server that crashed while holding leases takes its
    sessions straight back when it starts again, instead of waiting for them to expire (the
    serve lock already keeps a second server off the same workspace on this machine). Several
    nodes on one machine must each set ``store.node_id``.
    """
    return socket.gethostname() or "duragent"


def session_storage(config: StoreConfig, sessions_dir: Path) -> SessionStorage:
    """The configured ``SessionStorage`` (not yet opened: the registry opens it)."""
    if config.backend == "file":
        return SessionStore(sessions_dir)
    try:
        from duragent.store import postgres
    except ImportError as exc:
        raise ConfigError(
            f"store.backend is postgres but its driver is not installed ({exc.name})",
            field="store.backend",
            value=config.backend,
            fix="pip install 'duragent[postgres]'",
        ) from None
    dsn = config.dsn or ""
    password = postgres.dsn_password(dsn)
    if password and len(password) >= 8:  # shorter ones cannot be redacted safely
        redact_secrets(password)
    db = postgres.Database(dsn, schema=config.db_schema, max_size=config.pool_size)
    return postgres.PostgresSessionStore(
        db, node_id=config.node_id or default_node_id(), lease_seconds=config.lease_seconds
    )


def cluster_storage(store: SessionStorage) -> Cluster:
    """What the nodes serving ``store``'s workspace share (``store.cluster``).

    This process alone for files and memory; tables every node sees for PostgreSQL (the
    same pool, node id and lease length as the sessions).
    """
    postgres = _postgres_of(store)
    if postgres is None:
        return local_cluster()
    from duragent.store.postgres import postgres_cluster

    return postgres_cluster(
        postgres.db, postgres.node_id, postgres.lease_seconds, postgres.takeovers
    )


def schedule_storage(store: SessionStorage) -> tuple[ScheduleStorage, RunLogStorage] | None:
    """Schedules and run logs every node shares (PostgreSQL); None: the workspace's files."""
    postgres = _postgres_of(store)
    if postgres is None:
        return None
    from duragent.store.postgres import PostgresRunLog, PostgresSchedules

    return PostgresSchedules(postgres.db), PostgresRunLog(postgres.db)


def _postgres_of(store: SessionStorage) -> PostgresSessionStore | None:
    """``store`` when it is the PostgreSQL backend (whose module is loaded only if used)."""
    module = sys.modules.get("duragent.store.postgres.sessions")
    if module is None or not isinstance(store, module.PostgresSessionStore):
        return None
    postgres: PostgresSessionStore = store
    return postgres
