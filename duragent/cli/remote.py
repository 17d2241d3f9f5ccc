"""Commands that talk to a server: ``chat``, ``attach``, ``session list|show|delete``.

``session restore`` and ``session export`` (``session_export``) are the exceptions: they work
on the session files, with or without a server running.

Each finds the workspace's server (``--server`` to name one), starting one in the background
when none is running (see ``launcher``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from duragent.cli import session_export
from duragent.cli.chat import ChatSession, line_reader
from duragent.cli.client import ApiClient
from duragent.cli.errors import fail as _fail
from duragent.cli.errors import handles_errors, is_quiet
from duragent.cli.launcher import START_TIMEOUT_SECONDS, ensure_server, running_server
from duragent.cli.options import DEFAULT_CONFIG, ConfigOpt, PortOpt, ServerOpt
from duragent.cli.workspaces import open_workspace
from duragent.config import load_workspace
from duragent.store import SessionStore

__all__ = ["attachment_lines", "client_for", "register"]


def _announce(message: str) -> None:
    """Tell the user about a server started for them (stderr: stdout stays the answer)."""
    if not is_quiet():
        typer.echo(message, err=True)


AgentsDirOpt = Annotated[
    str | None,
    typer.Option(
        "--agents-dir",
        help="Agents folder (relative to the workspace root) for a server started by this "
        "command; a running server keeps its own.",
    ),
]


def client_for(
    config: Path, server: str | None, port: int | None = None, agents_dir: str | None = None
) -> ApiClient:
    """A client of the workspace's server (``server`` if named; started if none runs).

    ``agents_dir`` goes to a server started here, as in the reference; a server already
    running keeps the agents it was started with, and the user is told so rather than
    having the flag ignored without a word.
    """
    if server is None:
        ws = open_workspace(config, needed=("server",))
        if agents_dir and running_server(ws, wait=START_TIMEOUT_SECONDS) is not None:
            _announce(
                f"note: --agents-dir {agents_dir} applies only to a server started by this "
                "command; the running server of this workspace keeps its agents folder "
                "(stop it with `duragent serve stop` to use this one)"
            )
        server = ensure_server(ws, port, announce=_announce, agents_dir=agents_dir)
    else:  # the workspace, if any, only for its token
        ws = load_workspace(config, needed=("server",))
        if agents_dir:
            _announce(f"note: --agents-dir {agents_dir} has no effect with --server {server}")
    token = ws.config.server.api_token
    return ApiClient(server, token=token)


def register(app: typer.Typer) -> None:
    """Add the commands to ``app``."""
    session_app = typer.Typer(
        help="List, show, delete, restore and export sessions.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    app.add_typer(session_app, name="session")
    session_export.register(session_app)

    @app.command()
    @handles_errors
    def chat(
        agent: Annotated[str, typer.Option("-a", "--agent", help="Agent to talk to.")],
        config: ConfigOpt = DEFAULT_CONFIG,
        agents_dir: AgentsDirOpt = None,
        server: ServerOpt = None,
        port: PortOpt = None,
    ) -> None:
        """Chat with an agent (starts a local server if none is running).

        --port is where that server listens when one has to be started; a server already
        running for this workspace is used wherever it listens.
        """
        client = client_for(config, server, port, agents_dir)
        try:
            session_id = client.create_session(agent)["session_id"]
            ChatSession(client, agent, session_id, read=line_reader()).run()
        finally:
            client.close()

    @app.command()
    @handles_errors
    def attach(
        session_id: Annotated[str | None, typer.Argument(help="Session to continue.")] = None,
        list_: Annotated[bool, typer.Option("-l", "--list", help="List sessions.")] = False,
        config: ConfigOpt = DEFAULT_CONFIG,
        agents_dir: AgentsDirOpt = None,
        server: ServerOpt = None,
        port: PortOpt = None,
    ) -> None:
        """Continue a session: show its last messages, then chat."""
        client = client_for(config, server, port, agents_dir)
        try:
            if list_ or session_id is None:
                _print_sessions(client, active_only=True)
                return
            info = client.session(session_id)
            if info.get("status") == "completed":
                raise _fail(
                    f"session {session_id} has ended (completed); its messages stay readable "
                    f"with `duragent session show {session_id}`; start a new one with "
                    f"`duragent chat -a {info.get('agent')}`"
                )
            chat_session = ChatSession(client, str(info["agent"]), session_id, read=line_reader())
            chat_session.show_history()
            chat_session.run()
        finally:
            client.close()

    @session_app.command("list")
    @handles_errors
    def session_list(
        config: ConfigOpt = DEFAULT_CONFIG,
        agents_dir: AgentsDirOpt = None,
        server: ServerOpt = None,
        as_json: Annotated[
            bool, typer.Option("--json", help='Print the API\'s JSON ({"sessions": [...]}).')
        ] = False,
    ) -> None:
        """List sessions, newest first (ids are never shortened)."""
        client = client_for(config, server, agents_dir=agents_dir)
        try:
            if as_json:
                typer.echo(json.dumps({"sessions": client.sessions()}, indent=2))
                return
            _print_sessions(client, active_only=False)
        finally:
            client.close()

    @session_app.command("show")
    @handles_errors
    def session_show(
        session_id: str,
        limit: Annotated[
            int, typer.Option("-n", "--limit", min=1, help="How many of the last messages.")
        ] = 20,
        tools: Annotated[bool, typer.Option("--tools", help="Include tool calls.")] = False,
        config: ConfigOpt = DEFAULT_CONFIG,
        agents_dir: AgentsDirOpt = None,
        server: ServerOpt = None,
    ) -> None:
        """Show a session and its last messages."""
        client = client_for(config, server, agents_dir=agents_dir)
        console = Console(highlight=False)
        try:
            info = client.session(session_id)
            console.print(
                f"Session: {info['session_id']}\nAgent: {info['agent']}\n"
                f"Status: {info['status']}\nCreated: {info['created_at']}\n"
            )
            messages, clamped_to = client.history(session_id, limit=limit, include_tools=tools)
            if clamped_to is not None:
                typer.echo(
                    f"(the server shows at most {clamped_to} messages; these are the last "
                    f"{clamped_to}, not {limit})",
                    err=True,
                )
            for m in messages:
                label = m["role"] if m["role"] != "tool" else f"tool {m.get('call_id')}"
                console.print(Text.assemble((f"{label}>", "bold"), " ", str(m.get("content", ""))))
                for line in attachment_lines(m):
                    console.print(Text(line), soft_wrap=True)  # whole: the path is copied
        finally:
            client.close()

    @session_app.command("restore")
    @handles_errors
    def session_restore(session_id: str, config: ConfigOpt = DEFAULT_CONFIG) -> None:
        """Bring a quarantined session back (it is checked again when next used)."""
        path = restore_session(config, session_id)
        typer.echo(
            f"restored {session_id} to {path}; it loads on its next use "
            "(and is quarantined again if its files are still bad)"
        )

    @session_app.command("delete")
    @handles_errors
    def session_delete(
        session_id: str,
        config: ConfigOpt = DEFAULT_CONFIG,
        agents_dir: AgentsDirOpt = None,
        server: ServerOpt = None,
    ) -> None:
        """Delete a session and its files."""
        client = client_for(config, server, agents_dir=agents_dir)
        try:
            client.delete_session(session_id)
            typer.echo(f"deleted {session_id}")
        finally:
            client.close()


def _size(size: int) -> str:
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def attachment_lines(message: dict[str, Any]) -> list[str]:
    """What ``session show`` prints under a message for each attachment it carried.

    Its kind, name, type and size, and the path its bytes are downloaded from (with the
    API's token: ``GET <server><url>``); a voice note's transcript on a line of its own.
    """
    lines: list[str] = []
    for item in message.get("attachments") or ():
        name = item.get("name") or "(no name)"
        what = f"{item.get('mime')}, {_size(int(item.get('size', 0)))}"
        lines.append(f"  [{item.get('kind')}] {name} ({what}) {item.get('url')}")
        if item.get("transcript"):
            lines.append(f"    transcript: {item['transcript']}")
    return lines


def restore_session(config: Path, session_id: str) -> Path:
    """Move a quarantined session back into the workspace's sessions directory.

    Works on the files, so it needs no server; a running server notices on the session's
    next request (it reads the folder then), loads it and checks it again: files that are
    still bad are quarantined again with the new reason.
    """
    ws = open_workspace(config)
    store = SessionStore(ws.paths.sessions)
    try:
        return store.restore(session_id)
    except ValueError:
        raise _fail(f"invalid session id {session_id!r}") from None
    except FileNotFoundError:
        quarantined = ", ".join(store.quarantined()) or "none"
        raise _fail(
            f"session {session_id} is not quarantined in {ws.paths.sessions} "
            f"(quarantined: {quarantined})"
        ) from None
    except FileExistsError as exc:
        raise _fail(f"{exc}; delete or move one of them first") from None


def _console() -> Console:
    """Rich's console, wide enough for whole lines when stdout is not a terminal."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=200)


def _print_sessions(client: ApiClient, *, active_only: bool) -> None:
    sessions = client.sessions()
    if active_only:
        sessions = [s for s in sessions if s["status"] != "completed"]
    if not sessions:
        typer.echo("no sessions")
        return
    table = Table()
    # Ids are what people copy into `session show`: never wrapped or cut, whatever the width
    # (a pipe gets rich's default 80 columns).
    longest = max(len(str(s["session_id"])) for s in sessions)
    table.add_column("session", no_wrap=True, min_width=longest)
    for column in ("agent", "status", "updated"):
        table.add_column(column, overflow="fold")
    for s in sessions:
        table.add_row(s["session_id"], s["agent"], s["status"], s.get("updated_at", ""))
    console = _console()
    console.print(table)
    for s in sessions:
        if s.get("reason"):
            line = Text(f"{s['session_id']} {s['status']}: {s['reason']}")
            console.print(line, highlight=False, soft_wrap=True)  # whole, for copy and grep
    if any(s["status"] == "quarantined" for s in sessions):
        console.print("restore one (after fixing its files): duragent session restore ID")
    if any(s["status"] == "unavailable" for s in sessions):
        console.print(
            "unavailable: the reason says why; once a refused read is fixed (permissions, disk), "
            "it loads again: no restore is needed"
        )
