"""``duragent store migrate`` and ``duragent store copy``: the session store's own commands.

``migrate`` brings the configured PostgreSQL schema up to date (a server also does this at
start; the command lets an operator do it ahead of a deploy and see the version).
``copy --from file --to postgres`` moves every session of the workspace into the database
(or back with ``--from postgres --to file``) and compares every session's history after;
schedules and their run logs go with them (with PostgreSQL the scheduler reads them there).
Both read ``store:`` from ``duragent.yaml``; ``--dsn`` overrides its DSN. ``copy`` takes
the workspace's serve lock, so it refuses to run while a server serves the workspace.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from duragent.cli.errors import fail, handles_errors
from duragent.cli.options import DEFAULT_CONFIG, ConfigOpt
from duragent.cli.workspaces import open_workspace
from duragent.config import load_workspace
from duragent.config.store import StoreConfig
from duragent.store.backends import schedule_storage, session_storage
from duragent.store.copy import copy_schedules, copy_sessions
from duragent.store.protocols import RunLogStorage, ScheduleStorage, SessionStorage
from duragent.store.schedule_files import RunLogFiles, ScheduleFiles
from duragent.store.serve_lock import ServeLock

__all__ = ["register"]


class Backend(StrEnum):
    """Where sessions live."""

    FILE = "file"
    POSTGRES = "postgres"


DsnOpt = Annotated[
    str | None,
    typer.Option("--dsn", help="PostgreSQL DSN (default: store.dsn of duragent.yaml)."),
]


def _postgres_config(config: StoreConfig, dsn: str | None) -> StoreConfig:
    dsn = dsn or config.dsn
    if not dsn:
        raise fail(
            "no PostgreSQL DSN: set store.dsn in duragent.yaml (e.g. dsn: ${DATABASE_URL}) "
            "or pass --dsn"
        )
    return config.model_copy(update={"backend": "postgres", "dsn": dsn})


def _open(config_file: Path, backend: Backend, dsn: str | None) -> SessionStorage:
    workspace = open_workspace(config_file, needed=("store",))
    store_config = workspace.config.store
    if backend is Backend.POSTGRES:
        store_config = _postgres_config(store_config, dsn)
    else:
        store_config = store_config.model_copy(update={"backend": "file"})
    store = session_storage(store_config, workspace.paths.sessions)
    store.open()
    return store


def _schedules(store: SessionStorage, directory: Path) -> tuple[ScheduleStorage, RunLogStorage]:
    """The schedules of ``store``'s backend: the database's, or ``directory``'s files."""
    shared = schedule_storage(store)
    if shared is not None:
        return shared
    return ScheduleFiles(directory), RunLogFiles(directory / "runs")


def register(app: typer.Typer) -> None:
    """Add ``store`` and its commands to ``app``."""
    store_app = typer.Typer(
        help="Migrate the PostgreSQL schema; copy sessions between stores.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    app.add_typer(store_app, name="store")

    @store_app.command("migrate")
    @handles_errors
    def store_migrate(config: ConfigOpt = DEFAULT_CONFIG, dsn: DsnOpt = None) -> None:
        """Apply pending schema migrations to the configured PostgreSQL store."""
        from duragent.store.postgres import Database, current_version, migrate

        store_config = _postgres_config(load_workspace(config, needed=("store",)).config.store, dsn)
        db = Database(store_config.dsn or "", schema=store_config.db_schema, max_size=1)
        try:
            db.open()
            applied = migrate(db)
            version = current_version(db)
        finally:
            db.close()
        done = ", ".join(f"{m.version} {m.name}" for m in applied) or "none (up to date)"
        typer.echo(f"{db.where} schema {db.schema}: version {version}; applied: {done}")

    @store_app.command("copy")
    @handles_errors
    def store_copy(
        source: Annotated[Backend, typer.Option("--from", help="Copy from this store.")],
        target: Annotated[Backend, typer.Option("--to", help="Copy into this store.")],
        config: ConfigOpt = DEFAULT_CONFIG,
        dsn: DsnOpt = None,
    ) -> None:
        """Copy every session (events, archive, snapshot, chats), then compare each history."""
        if source is target:
            raise fail("--from and --to name the same store")
        paths = open_workspace(config, needed=("store",)).paths
        # The server's lock: a server serving this workspace would write while we copy.
        lock = ServeLock.acquire(paths.workspace, paths.sessions)
        try:
            src = _open(config, source, dsn)
            dst = _open(config, target, dsn)
            try:
                report = copy_sessions(src, dst)
                schedules = copy_schedules(
                    _schedules(src, paths.schedules), _schedules(dst, paths.schedules)
                )
            finally:
                src.close()
                dst.close()
        finally:
            lock.release()
        typer.echo(
            f"copied {len(report.copied)} sessions, {len(report.already_there)} already there, "
            f"{report.chats} chats; every history compared"
        )
        if report.redone:
            typer.echo(
                f"{len(report.redone)} of them an earlier, interrupted copy had left half "
                f"done (removed from the target and copied again): {', '.join(report.redone)}"
            )
        typer.echo(
            f"copied {len(schedules.copied)} schedules with their run logs, "
            f"{len(schedules.already_there)} already there; the runs of "
            f"{len(schedules.runs_only)} schedules declared in agent.yaml"
        )
        for schedule_id in schedules.conflicts:
            _told(f"error: schedule {schedule_id} exists in the target with another document")
        for sid, note in report.unclean_source.items():
            _told(f"warning: session {sid}: the source log had skipped lines ({note})")
        if report.quarantined:
            _told(
                f"warning: {len(report.quarantined)} quarantined sessions not copied "
                f"(restore them first): {', '.join(report.quarantined)}"
            )
        for sid in report.conflicts:
            _told(f"error: session {sid} exists in the target with another history")
        for sid, diff in report.differences.items():
            _told(f"error: session {sid} differs after the copy: {'; '.join(diff)}")
        if not report.ok or schedules.conflicts:
            raise typer.Exit(1)


def _told(line: str) -> None:
    """A warning or an error of ``copy``: on stderr, as every CLI error (stdout: the counts)."""
    typer.echo(line, err=True)
