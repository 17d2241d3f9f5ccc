"""``duragent doctor``'s store checks: reachable, at a known schema version, clocks agree.

With ``store.backend: postgres``: can the DSN be reached, is the schema at the version this
duragent knows, and how far is this node's clock from the database server's? Leases are
timed by the database's clock, so skew cannot hand a session to two nodes; it does shift what
a node stamps and schedules with its own clock (``store.postgres.clock`` says what): a
warning over ``SKEW_WARNING`` seconds, an error over ``SKEW_ERROR``.

The database is opened once: the same connection reads the schedules the server would run
(``StoreReport.schedules``, checked by ``doctor_files.schedule_findings``) and the rows of
the chat map the server moves aside or did (``chats.chat_problems``).

Never raises and never prints the password (``describe_dsn``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from duragent.cli.findings import Finding, Level
from duragent.config.store import StoreConfig
from duragent.errors import ConfigError, StorageError

if TYPE_CHECKING:
    from duragent.store.postgres import Database

__all__ = ["SKEW_ERROR", "SKEW_WARNING", "StoreReport", "read_store", "store_findings"]

SKEW_WARNING = 0.5
"""Seconds of clock skew against the database that doctor warns about."""
SKEW_ERROR = 5.0
"""Seconds of clock skew that doctor calls an error (history timestamps and schedule times
of this node are then visibly wrong)."""

_WHY_SKEW = (
    "sync this machine's clock (NTP: chrony or systemd-timesyncd) with the database server's. "
    "Leases use the database's clock, so skew cannot give a session two owners, but this "
    "node stamps history and fires schedules with its own clock"
)


Schedules = dict[str, dict[str, Any] | None]


@dataclass(frozen=True)
class StoreReport:
    """What ``doctor`` learnt from the store with one connection."""

    findings: list[Finding]
    schedules: Schedules | None = None
    """The database's schedules by id; None with the file backend (the files are read
    elsewhere) or when the database cannot be read at its known schema version (a finding
    says why)."""


def read_store(
    config: StoreConfig,
    *,
    server_host: str | None = None,
    clock: Callable[[], float] = time.time,
) -> StoreReport:
    """The store's findings and the schedules it holds (nothing for the file backend).

    ``server_host`` is ``server.host`` (what other nodes are told when ``store.advertise_url``
    is unset); ``clock`` is this node's wall clock (a parameter only so tests can shift it).
    """
    if config.backend != "postgres":
        return StoreReport([])
    advertised = _advertise_finding(config, server_host)
    report = _read_database(config, clock)
    return StoreReport(([advertised] if advertised else []) + report.findings, report.schedules)


def store_findings(
    config: StoreConfig,
    *,
    server_host: str | None = None,
    clock: Callable[[], float] = time.time,
) -> list[Finding]:
    """``read_store``'s findings alone."""
    return read_store(config, server_host=server_host, clock=clock).findings


def _advertise_finding(config: StoreConfig, server_host: str | None) -> Finding | None:
    """A warning when other nodes would be sent to a wildcard address.

    Without ``advertise_url`` a node tells the others ``http://<server.host>:<port>``. For
    ``0.0.0.0`` or ``::`` that is no address of this node for them (on Linux it even reaches
    the sender itself), so their forwards would fail or loop.
    """
    if config.advertise_url is not None or server_host not in _WILDCARDS:
        return None
    return Finding(
        Level.WARNING,
        "store",
        f"server.host is {server_host} and store.advertise_url is unset: other nodes would "
        f"forward this node's sessions to http://{server_host}:<port>, which does not reach it",
        "set store.advertise_url to the URL other nodes reach this node at "
        "(e.g. http://10.0.0.5:8080)",
    )


_WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", ""})


def _read_database(config: StoreConfig, clock: Callable[[], float]) -> StoreReport:
    """Reachable, schema version, clock skew; the schedules when the schema is known."""
    try:
        from duragent.store.postgres import Database
    except ImportError as exc:
        missing = Finding(
            Level.ERROR,
            "store",
            f"store.backend is postgres but its driver is not installed ({exc.name})",
            "pip install 'duragent[postgres]'",
        )
        return StoreReport([missing])
    try:
        db = Database(config.dsn or "", schema=config.db_schema, max_size=1, connect_timeout=5)
    except ConfigError as exc:
        return StoreReport([Finding(Level.ERROR, "store", exc.reason, exc.fix)])
    try:
        db.open()
        schema = _schema_finding(db)
        skew = _clock_finding(db, clock)
        known = schema.level is Level.OK
        schedules = _schedules(db) if known else None
        return StoreReport([schema, skew, *(_chat_findings(db) if known else [])], schedules)
    except StorageError as exc:
        from duragent.store.postgres import CONNECT_FIX

        told = str(exc).replace(f". Fix: {CONNECT_FIX}", "")  # the fix goes on its own line
        return StoreReport([Finding(Level.ERROR, "store", told, CONNECT_FIX)])
    finally:
        db.close()


def _schedules(db: Database) -> Schedules:
    """Every schedule in the database by id (None: one that cannot be read)."""
    from duragent.store.postgres import PostgresSchedules

    schedules = PostgresSchedules(db)
    return {sched_id: schedules.get(sched_id) for sched_id in schedules.ids()}


def _chat_findings(db: Database) -> list[Finding]:
    """Rows of the chat map the server moves aside or did, and rows whose session is gone."""
    from duragent.store.postgres.chats import chat_problems

    return [
        Finding(
            Level.WARNING,
            "chat index",
            f"{p['record']}: skipped: {p['reason']}"
            + (f" (moved to the {p['moved_to']})" if "moved_to" in p else ""),
            "nothing to do: the chat's next message starts a new session; delete rows of "
            "chats_quarantine once read",
        )
        for p in chat_problems(db)
    ]


def _schema_finding(db: Database) -> Finding:
    from duragent.store.postgres import current_version
    from duragent.store.postgres.schema import known_migrations

    version = current_version(db)
    known = known_migrations()[-1].version
    where = f"{db.where} schema {db.schema}"
    if version > known:
        return Finding(
            Level.ERROR,
            "store",
            f"{where} is at schema version {version}, newer than this duragent's {known}",
            "upgrade duragent (it refuses to write to a newer schema)",
        )
    if version < known:
        return Finding(
            Level.WARNING,
            "store",
            f"{where} is at schema version {version}; this duragent applies up to {known}",
            "run `duragent store migrate` (or start the server: it migrates at start)",
        )
    return Finding(Level.OK, "store", f"{where} reachable, schema version {version}")


def _clock_finding(db: Database, clock: Callable[[], float]) -> Finding:
    from duragent.store.postgres.clock import read_clock_skew

    reading = read_clock_skew(db, clock=clock)
    direction = "behind" if reading.skew > 0 else "ahead of"
    told = (
        f"this node's clock is {_seconds(abs(reading.skew))} {direction} the database "
        f"server's (±{_seconds(reading.uncertainty)})"
    )
    if reading.at_least > SKEW_ERROR:
        return Finding(Level.ERROR, "clock", f"{told}: over {SKEW_ERROR:g} s", _WHY_SKEW)
    if reading.at_least > SKEW_WARNING:
        return Finding(Level.WARNING, "clock", f"{told}: over {SKEW_WARNING:g} s", _WHY_SKEW)
    return Finding(Level.OK, "clock", told)


def _seconds(value: float) -> str:
    """``value`` seconds for a person: milliseconds below one second."""
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"
