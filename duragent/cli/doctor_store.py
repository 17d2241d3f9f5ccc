"""``duragent doctor``'s store check: is the PostgreSQL store reachable and at a known version?

With ``store.backend: postgres``: can the DSN be reached, and is the schema at the version
this duragent knows?

Never raises and never prints the password (``describe_dsn``). Clock skew between nodes is
checked with issue 24's leases (item 2/4), not yet here.
"""

from __future__ import annotations

from duragent.cli.findings import Finding, Level
from duragent.config.store import StoreConfig
from duragent.errors import ConfigError, StorageError

__all__ = ["store_findings"]


def store_findings(config: StoreConfig) -> list[Finding]:
    """The store's findings (none for the file backend: the files are checked elsewhere)."""
    if config.backend != "postgres":
        return []
    try:
        from duragent.store.postgres import Database, current_version
        from duragent.store.postgres.schema import known_migrations
    except ImportError as exc:
        return [
            Finding(
                Level.ERROR,
                "store",
                f"store.backend is postgres but its driver is not installed ({exc.name})",
                "pip install 'duragent[postgres]'",
            )
        ]
    try:
        db = Database(config.dsn or "", schema=config.db_schema, max_size=1, connect_timeout=5)
    except ConfigError as exc:
        return [Finding(Level.ERROR, "store", exc.reason, exc.fix)]
    try:
        db.open()
        version = current_version(db)
    except StorageError as exc:
        return [
            Finding(
                Level.ERROR,
                "store",
                str(exc),
                "check store.dsn (host, port, user, password) and that PostgreSQL runs",
            )
        ]
    finally:
        db.close()
    known = known_migrations()[-1].version
    where = f"{db.where} schema {db.schema}"
    if version > known:
        return [
            Finding(
                Level.ERROR,
                "store",
                f"{where} is at schema version {version}, newer than this duragent's {known}",
                "upgrade duragent (it refuses to write to a newer schema)",
            )
        ]
    if version < known:
        return [
            Finding(
                Level.WARNING,
                "store",
                f"{where} is at schema version {version}; this duragent applies up to {known}",
                "run `duragent store migrate` (or start the server: it migrates at start)",
            )
        ]
    return [Finding(Level.OK, "store", f"{where} reachable, schema version {version}")]
