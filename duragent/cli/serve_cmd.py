"""``duragent serve`` and its subcommands ``status``, ``stop`` and ``reload-agents``.

As in the reference, ``serve`` alone runs the server and ``serve status|stop|reload-agents``
act on the running one; ``-c``/``-p`` may come before or after the subcommand. The running
server is the process holding the workspace's lock (``store.serve_lock``), found wherever it
listens, never "whatever answers on the configured port": ``stop`` can then never stop the
server of another workspace that happens to use that port (the reference would). ``stop``
asks through ``POST /api/admin/v1/shutdown`` (the same graceful stop as SIGTERM) and waits
until the lock is released, so ``serve stop && serve`` works. The admin calls carry
``server.admin_token`` when the workspace sets one; otherwise only loopback is accepted,
which is where the CLI connects.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from duragent.cli.client import ApiClient, ApiError
from duragent.cli.errors import fail, handles_errors
from duragent.cli.launcher import LaunchError, running_server
from duragent.cli.logformat import LogFormat, use_log_format
from duragent.cli.options import DEFAULT_CONFIG, ConfigOpt, HostOpt, PortOpt
from duragent.cli.workspaces import open_workspace, workspace_problem
from duragent.config import LoadedWorkspace, load_workspace
from duragent.runtime import Runtime
from duragent.store.serve_lock import Holder, lock_files, read_holder

__all__ = ["STOP_WAIT_SECONDS", "register", "uptime"]

STOP_WAIT_SECONDS = 30.0
"""How long ``serve stop`` waits for the server to release the workspace (its own grace
periods are 10 s for HTTP requests plus the flush of every session)."""

_SUBCOMMAND_CONFIG = Annotated[
    Path | None,
    typer.Option("-c", "--config", envvar="DURAGENT_CONFIG", help="Path to duragent.yaml."),
]
_SUBCOMMAND_PORT = Annotated[
    int | None,
    typer.Option(
        "-p",
        "--port",
        min=0,
        max=65535,
        envvar="DURAGENT_PORT",
        help="Accepted for compatibility: the server is found through the workspace's lock.",
    ),
]


def _holder(ws: LoadedWorkspace) -> Holder | None:
    for path in lock_files(ws.paths.workspace, ws.paths.sessions):
        holder = read_holder(path)
        if holder is not None:
            return holder
    return None


def uptime(started: str | None, now: datetime | None = None) -> str | None:
    """``3d 4h 5m 6s`` since ``started`` (RFC 3339), or None when it cannot be read."""
    if not started:
        return None
    try:
        since = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return None
    seconds = max(0, int(((now or datetime.now(UTC)) - since).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m")]
    shown = "".join(f"{n}{unit} " for n, unit in parts if n)
    return f"{shown}{secs}s"


def _workspace(ctx: typer.Context, config: Path | None) -> LoadedWorkspace:
    """The workspace named by the subcommand's ``-c``, else by ``serve``'s."""
    chosen: Path = config if config is not None else _given(ctx).get("config", DEFAULT_CONFIG)
    return open_workspace(chosen, needed=("server",))


def _given(ctx: typer.Context) -> dict[str, Any]:
    """``serve``'s own options, as its callback left them for the subcommand."""
    return ctx.obj if isinstance(ctx.obj, dict) else {}


def _port_note(ws: LoadedWorkspace, port: int | None) -> str | None:
    """What answers on the port this workspace would use, when it is not this workspace."""
    chosen = ws.config.server.port if port is None else port
    try:
        ready = httpx.get(f"http://127.0.0.1:{chosen}/readyz", timeout=1.0).json()
    except (httpx.HTTPError, ValueError):
        return None
    if isinstance(ready, dict) and ready.get("workspace_hash") not in (
        None,
        ws.paths.workspace_hash,
    ):
        return f"port {chosen} is used by the server of another workspace"
    return None


def _admin_client(ws: LoadedWorkspace, url: str) -> ApiClient:
    return ApiClient(url, token=ws.config.server.admin_token, timeout=30)


def _refused(ws: LoadedWorkspace, exc: ApiError) -> typer.Exit:
    """A 403 from an admin route, with what to fix (the token this shell resolves)."""
    return fail(
        f"the server refused the admin request ({exc}); server.admin_token in "
        f"{ws.paths.config_file} must resolve here to the server's token (a ${{VAR}} in it "
        "must be set in this shell too)"
    )


def _status(ws: LoadedWorkspace, port: int | None) -> None:
    holder = _holder(ws)
    try:
        url = running_server(ws, wait=1.0) if holder is not None else None
    except LaunchError:  # it holds the lock but does not answer (yet)
        assert holder is not None
        where = f" at {holder.address}" if holder.address else ""
        typer.echo(
            f"Server of {ws.paths.root} is starting or not answering (PID {holder.pid}{where})"
        )
        return
    if holder is None or url is None:
        typer.echo(f"No server running for {ws.paths.root}")
        note = _port_note(ws, port)
        if note:
            typer.echo(f"  ({note})")
        return
    client = ApiClient(url, token=ws.config.server.api_token, timeout=10)
    try:
        ready = httpx.get(f"{url}/readyz", timeout=5.0)
        body: dict[str, Any] = ready.json() if ready.content else {}
        state = "ok" if ready.status_code == 200 else f"not ready: {body.get('detail', '')}"
        port_number = httpx.URL(url).port
        typer.echo(f"Server running on port {port_number}")
        typer.echo(f"  Status: {state}")
        typer.echo(f"  URL: {url}")
        typer.echo(f"  PID: {holder.pid}")
        since = uptime(holder.started)
        if since is not None:
            typer.echo(f"  Started: {holder.started} (up {since})")
        typer.echo(f"  Workspace: {ws.paths.root}")
        try:
            names = [str(a["name"]) for a in client.agents()]
            typer.echo(f"  Agents: {', '.join(names) or '(none)'}")
        except ApiError as exc:
            typer.echo(f"  Agents: (not listed: {exc})")
        gateways = body.get("gateways")
        if isinstance(gateways, dict) and gateways:
            listed = ", ".join(f"{name} {gw_state}" for name, gw_state in gateways.items())
            typer.echo(f"  Gateways: {listed}")
        version = client.version()
        typer.echo(f"  Version: {version.get('version')} ({version.get('variant')})")
    finally:
        client.close()


def _released(ws: LoadedWorkspace, deadline: float) -> bool:
    delay = 0.05
    while _holder(ws) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(0.5, delay * 2)
    return True


def _stop(ws: LoadedWorkspace) -> None:
    holder = _holder(ws)
    url = running_server(ws, wait=5.0) if holder is not None else None
    if holder is None or url is None:
        raise fail(f"no server running for {ws.paths.root}")
    client = _admin_client(ws, url)
    try:
        client.shutdown()
    except ApiError as exc:
        if exc.status == 403:
            raise _refused(ws, exc) from None
        if exc.status != 409:  # 409: a shutdown is already under way; wait for it too
            raise
    finally:
        client.close()
    typer.echo(f"Shutdown initiated for server on port {httpx.URL(url).port} (PID {holder.pid})")
    if not _released(ws, time.monotonic() + STOP_WAIT_SECONDS):
        raise fail(
            f"the server (PID {holder.pid}) is still stopping after {STOP_WAIT_SECONDS:g} s; "
            f"see its log, or send it SIGTERM (kill {holder.pid})"
        )
    typer.echo("Server stopped")


def _reload(ws: LoadedWorkspace) -> None:
    url = running_server(ws, wait=5.0)
    if url is None:
        raise fail(f"no server running for {ws.paths.root}")
    client = _admin_client(ws, url)
    try:
        result = client.reload_agents()
    except ApiError as exc:
        if exc.status == 403:
            raise _refused(ws, exc) from None
        raise
    finally:
        client.close()
    typer.echo(str(result.get("message") or f"Reloaded {result.get('reloaded')} agents"))
    for broken in result.get("broken") or []:
        first = str(broken.get("error", "")).splitlines()[0:1]
        typer.echo(f"  not loaded: {broken.get('path')}: {first[0] if first else ''}")
    for line in _changes(result.get("changes") or {}):
        typer.echo(f"  {line}")
    for note in result.get("notes") or []:
        typer.echo(f"  note: {note}")


def _changes(changes: dict[str, Any]) -> list[str]:
    """What a reload changed, one line per kind (``agents changed: bot (spec.tools)``)."""
    lines = []
    for what in ("agents", "schedules"):
        found: dict[str, Any] = changes.get(what) or {}
        parts: dict[str, list[str]] = found.get("parts") or {}
        for kind in ("added", "removed", "changed"):
            names = [
                f"{name} ({', '.join(parts[name])})"
                if kind == "changed" and name in parts
                else name
                for name in found.get(kind) or []
            ]
            if names:
                lines.append(f"{what} {kind}: {', '.join(names)}")
    return lines


def register(app: typer.Typer) -> None:
    """Add ``serve`` (with its subcommands) to ``app``."""
    serve_app = typer.Typer(
        rich_markup_mode=None,
        invoke_without_command=True,
        subcommand_metavar="[status|stop|reload-agents]",
    )
    app.add_typer(serve_app, name="serve")

    @serve_app.callback(invoke_without_command=True)
    @handles_errors
    def serve(
        ctx: typer.Context,
        config: ConfigOpt = DEFAULT_CONFIG,
        host: HostOpt = None,
        port: PortOpt = None,
        agents_dir: Annotated[
            str | None,
            typer.Option(
                "--agents-dir",
                help="Agents folder (relative to the workspace root); serve only.",
            ),
        ] = None,
        ephemeral: Annotated[
            int | None,
            typer.Option(
                "--ephemeral", min=1, help="Exit after this many seconds without live sessions."
            ),
        ] = None,
        log_format: Annotated[
            LogFormat,
            typer.Option(
                "--log-format",
                envvar="DURAGENT_LOG_FORMAT",
                case_sensitive=False,
                help="Log lines as text (for people) or json (one object per line).",
            ),
        ] = LogFormat.TEXT,
    ) -> None:
        """Run the agents: HTTP API and every configured front end, until SIGINT/SIGTERM.

        `serve status`, `serve stop` and `serve reload-agents` act on the workspace's
        running server instead.
        """
        ctx.obj = {"config": config, "port": port}  # the subcommand's defaults
        if ctx.invoked_subcommand is not None:
            given = [
                flag
                for flag, value in (
                    ("--host", host),
                    ("--agents-dir", agents_dir),
                    ("--ephemeral", ephemeral),
                )
                if value is not None
            ]
            if given:
                raise fail(
                    f"{', '.join(given)} applies only when starting a server "
                    f"(`duragent serve`), not to `serve {ctx.invoked_subcommand}`",
                    code=2,
                )
            return
        use_log_format(log_format)  # before the workspace is read: its warnings too
        problem = workspace_problem(config)
        if problem:
            raise fail(str(problem))
        ws = load_workspace(config)  # every ${VAR}: serving uses every field
        runtime = Runtime(ws, host=host, port=port, agents_dir=agents_dir, ephemeral=ephemeral)
        asyncio.run(runtime.run_until_stopped())

    def parent_port(ctx: typer.Context, port: int | None) -> int | None:
        return port if port is not None else _given(ctx).get("port")

    @serve_app.command("status")
    @handles_errors
    def status(
        ctx: typer.Context, config: _SUBCOMMAND_CONFIG = None, port: _SUBCOMMAND_PORT = None
    ) -> None:
        """Whether the workspace's server runs: port, PID, uptime, agents, version."""
        _status(_workspace(ctx, config), parent_port(ctx, port))

    @serve_app.command("stop")
    @handles_errors
    def stop(
        ctx: typer.Context, config: _SUBCOMMAND_CONFIG = None, port: _SUBCOMMAND_PORT = None
    ) -> None:
        """Stop the workspace's server gracefully (every session saved) and wait for it."""
        _stop(_workspace(ctx, config))

    @serve_app.command("reload-agents")
    @handles_errors
    def reload_agents(
        ctx: typer.Context, config: _SUBCOMMAND_CONFIG = None, port: _SUBCOMMAND_PORT = None
    ) -> None:
        """Re-read the agents folder in the running server (no restart, sessions kept).

        Everything the agent files declare is taken: tools, access, hooks and schedules (a
        schedule removed from spec.schedules never runs again); prints what changed.
        """
        _reload(_workspace(ctx, config))
