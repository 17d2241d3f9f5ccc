"""``duragent session export ID --format reference [-o DIR]``: going back to the reference.

At first start duragent converts the reference's sessions and sets their ``state.json``
aside (``store.reference_migration``), so the reference no longer lists them. This writes
one session as the reference lays it out (``session.reference_export``), into
``DIR/<session_id>/`` (``DIR``: the current folder by default; the reference's sessions
folder to hand it straight back). Like ``session restore`` it works on the store, with or
without a server running, and writes nothing there.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from duragent.cli.errors import handles_errors
from duragent.cli.options import DEFAULT_CONFIG, ConfigOpt
from duragent.cli.workspaces import open_workspace
from duragent.session.reference_export import export_reference, write_reference
from duragent.store import SessionStore
from duragent.store.backends import session_storage

__all__ = ["ExportFormat", "register"]


class ExportFormat(enum.StrEnum):
    """Layouts ``session export`` writes."""

    REFERENCE = "reference"
    """The reference's: ``state.json`` (schema 2), ``events.jsonl``, ``events.archive.jsonl``."""


def register(session_app: typer.Typer) -> None:
    """Add ``export`` to the ``session`` commands."""

    @session_app.command("export")
    @handles_errors
    def session_export(
        session_id: str,
        fmt: Annotated[
            ExportFormat,
            typer.Option("--format", help="Layout to write (reference: giosakti/duragent's)."),
        ],
        output: Annotated[
            Path,
            typer.Option("-o", "--output", help="Folder to write <session_id>/ into."),
        ] = Path(),
        config: ConfigOpt = DEFAULT_CONFIG,
    ) -> None:
        """Write a session in another layout (the reference's: to go back to it)."""
        ws = open_workspace(config, needed=("store",))
        store = session_storage(ws.config.store, ws.paths.sessions)
        opened = not isinstance(store, SessionStore)  # files: read as they are, no migration
        if opened:
            store.open()
        try:
            export = export_reference(store, session_id)
        finally:
            if opened:
                store.close()
        target = write_reference(export, output)
        left_out = ", ".join(f"{n} {kind}" for kind, n in sorted(export.left_out.items()))
        typer.echo(
            f"exported {session_id} to {target} ({fmt.value} layout: "
            f"{len(export.archive) + len(export.events)} events"
            + (f"; left out, unknown to it: {left_out}" if left_out else "")
            + ")"
        )
