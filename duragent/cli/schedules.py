"""``duragent schedule list|show|cancel|run``: the scheduler through the workspace's server.

Every command asks the server (``/api/v1/schedules``), starting one when none runs, as the
session commands do: the server owns the schedules' run state, and a cancel must reach the
loop that would run them, not only the file.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from duragent.cli.errors import handles_errors
from duragent.cli.options import DEFAULT_CONFIG, ConfigOpt, ServerOpt
from duragent.cli.remote import client_for

__all__ = ["register", "timing_text"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's JSON.")]


def timing_text(schedule: dict[str, Any]) -> str:
    """``cron 0 9 * * * Europe/Berlin``, ``every 60s``, ``at 2026-12-01T09:00:00.000Z``."""
    timing = schedule.get("schedule") or {}
    if "cron" in timing:
        cron = timing["cron"]
        return f"cron {cron.get('expr')}" + (f" {cron['tz']}" if cron.get("tz") else "")
    if "every" in timing:
        return f"every {timing['every'].get('every_seconds')}s"
    if "at" in timing:
        return f"at {timing['at'].get('at')}"
    return "?"


def _dest(schedule: dict[str, Any]) -> str:
    dest = schedule.get("destination")
    return f"{dest['gateway']}:{dest['chat_id']}" if dest else "(own session)"


def register(app: typer.Typer) -> None:
    """Add ``schedule`` and its commands to ``app``."""
    schedule_app = typer.Typer(
        help="List, show, cancel and run schedules.", no_args_is_help=True, rich_markup_mode=None
    )
    app.add_typer(schedule_app, name="schedule")

    @schedule_app.command("list")
    @handles_errors
    def schedule_list(
        config: ConfigOpt = DEFAULT_CONFIG, server: ServerOpt = None, as_json: JsonOpt = False
    ) -> None:
        """List schedules: id, status, timing, next run, last outcome, agent, destination."""
        client = client_for(config, server)
        try:
            schedules = client.schedules()
        finally:
            client.close()
        if as_json:
            typer.echo(json.dumps({"schedules": schedules}, indent=2))
            return
        if not schedules:
            typer.echo("no schedules")
        for s in schedules:
            typer.echo(
                f"{s['id']}  {s['status']:<9}  {timing_text(s)}  next={s.get('next_run_at')}  "
                f"last={s.get('last_status')}  {s['agent']}  {_dest(s)}"
            )

    @schedule_app.command("show")
    @handles_errors
    def schedule_show(
        schedule_id: str,
        config: ConfigOpt = DEFAULT_CONFIG,
        server: ServerOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Show a schedule, its run state and its recent runs."""
        client = client_for(config, server)
        try:
            s = client.schedule(schedule_id)
        finally:
            client.close()
        if as_json:
            typer.echo(json.dumps(s, indent=2))
            return
        payload = s.get("payload") or {}
        kind = next(iter(payload), "?")
        text = (payload.get(kind) or {}).get(kind, "")
        lines = [
            f"Schedule: {s['id']}",
            f"Agent: {s['agent']}",
            f"Status: {s['status']}",
            f"Timing: {timing_text(s)}",
            f"Destination: {_dest(s)}",
            f"Payload: {kind}: {text}",
            f"Next run: {s.get('next_run_at')}",
            f"Last run: {s.get('last_run_at')} {s.get('last_status') or ''}".rstrip(),
        ]
        if s.get("last_error"):
            lines.append(f"Last error: {s['last_error']}")
        if s.get("declared_in"):
            lines.append(f"Declared in: {s['declared_in']}")
        typer.echo("\n".join(lines))
        runs = s.get("runs") or []
        if runs:
            typer.echo("\nRuns (oldest first):")
        for run in runs:
            typer.echo("  " + json.dumps(run, separators=(", ", ": ")))

    @schedule_app.command("cancel")
    @handles_errors
    def schedule_cancel(
        schedule_id: str, config: ConfigOpt = DEFAULT_CONFIG, server: ServerOpt = None
    ) -> None:
        """Cancel a schedule (its file and run log are kept)."""
        client = client_for(config, server)
        try:
            client.cancel_schedule(schedule_id)
        finally:
            client.close()
        typer.echo(f"cancelled {schedule_id}")

    @schedule_app.command("run")
    @handles_errors
    def schedule_run(
        schedule_id: str, config: ConfigOpt = DEFAULT_CONFIG, server: ServerOpt = None
    ) -> None:
        """Run a schedule now, outside its timing (its result goes where its runs go)."""
        client = client_for(config, server)
        try:
            client.run_schedule(schedule_id)
        finally:
            client.close()
        typer.echo(f"started a run of {schedule_id}")
