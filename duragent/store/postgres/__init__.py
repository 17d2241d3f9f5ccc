"""The PostgreSQL backend of the store protocols (``pip install 'duragent[postgres]'``).

Imported only when ``duragent.yaml`` selects ``store: {backend: postgres}`` (or by the
``duragent store`` commands), so the file backend never needs the driver.

- ``connection``: the pool (psycopg 3 + psycopg_pool, synchronous: the actors call the store
  from their threads) and DSN descriptions without the password.
- ``schema``: numbered SQL migrations with a ``schema_version`` table.
- ``leases``: the session lease (owner node, epoch, expiry) and the epoch fence on writes.
- ``sessions``: ``PostgresSessionStore``, the ``SessionStorage`` (``event_rows``: its event
  log, ``snapshot_rows``: its snapshot); ``chats``: its chat map;
  ``health``: its write health and ``/readyz`` probe.
- ``schedules``: ``PostgresSchedules`` and ``PostgresRunLog``.
- ``cluster``: inbound claims, leader leases and schedule due-time claims shared by nodes.
- ``copy``: moving every session of one backend into another, verified.
"""

from __future__ import annotations

from duragent.store.postgres.cluster import postgres_cluster
from duragent.store.postgres.connection import CONNECT_FIX, Database, describe_dsn, dsn_password
from duragent.store.postgres.leases import FencedWriteError, Lease, LeaseHeldError
from duragent.store.postgres.schedules import PostgresRunLog, PostgresSchedules
from duragent.store.postgres.schema import SchemaTooNewError, current_version, migrate
from duragent.store.postgres.sessions import EventSeqConflictError, PostgresSessionStore

__all__ = [
    "CONNECT_FIX",
    "Database",
    "EventSeqConflictError",
    "FencedWriteError",
    "Lease",
    "LeaseHeldError",
    "PostgresRunLog",
    "PostgresSchedules",
    "PostgresSessionStore",
    "SchemaTooNewError",
    "current_version",
    "describe_dsn",
    "dsn_password",
    "migrate",
    "postgres_cluster",
]
