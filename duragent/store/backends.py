"""The session store ``duragent.yaml`` selects (``store.backend``): files, or PostgreSQL.

The Postgres package (and its driver) is imported only here and only when selected, so a
workspace on files never needs ``psycopg``. The DSN's password is registered with the log
redactor before anything can log it, and messages describe the database without it.
"""

from __future__ import annotations

import socket
from pathlib import Path

from duragent.config.store import StoreConfig
from duragent.core.redact import redact_secrets
from duragent.errors import ConfigError
from duragent.store.protocols import SessionStorage
from duragent.store.session_store import SessionStore

__all__ = ["default_node_id", "session_storage"]


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
