"""``duragent pairing list|approve|revoke``: the pairing files of the workspace's agents.

``dm.policy: pairing`` gives an unknown direct-message sender a code (``frontkit.pairing``);
these commands are the owner's side without a chat: they read and change
``<workspace>/.duragent/pairing/<agent>.yaml`` directly (under the same lock a running server
uses), so they work whether or not a server runs, and a running server sees the change at the
sender's next message. The workspace is found like every command's: ``-c``/``DURAGENT_CONFIG``
or ``duragent.yaml`` in the current directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from duragent.cli.errors import fail, handles_errors
from duragent.cli.options import DEFAULT_CONFIG, ConfigOpt
from duragent.cli.workspaces import open_workspace
from duragent.core.clock import utc_now
from duragent.frontkit.pairing import (
    CODE_TTL_SECONDS,
    PAIRING_DIR,
    PairingBook,
    PendingCode,
    book_for,
    normalise_code,
)

__all__ = ["register"]

AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", help="Only this agent (default: every agent with a pairing file)."),
]


def _books(config: Path, agent: str | None) -> list[PairingBook]:
    """The pairing books the command looks at: ``agent``'s, or every one the workspace has."""
    workspace = open_workspace(config).paths.workspace
    if agent is not None:
        return [book_for(workspace, agent)]
    folder = workspace / PAIRING_DIR
    names = sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
    return [book_for(workspace, name) for name in names]


def _minutes(code: PendingCode) -> int:
    return max(0, round(code.seconds_left(utc_now()) / 60))


def register(app: typer.Typer) -> None:
    """Add ``pairing`` and its commands to ``app``."""
    pairing_app = typer.Typer(
        help="Approve and list the direct-message senders of agents with dm.policy: pairing.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    app.add_typer(pairing_app, name="pairing")

    @pairing_app.command("list")
    @handles_errors
    def pairing_list(config: ConfigOpt = DEFAULT_CONFIG, agent: AgentOpt = None) -> None:
        """List the codes waiting for an owner and the senders paired, per agent."""
        shown = False
        for book in _books(config, agent):
            pending, paired = book.pending(), book.paired_senders()
            if not pending and not paired:
                continue
            shown = True
            typer.echo(f"agent {book.agent}")
            for c in pending:
                typer.echo(
                    f"  waiting  {c.code}  {c.gateway} {c.sender_id} ({c.name})  "
                    f"expires in {_minutes(c)} min"
                )
            for p in paired:
                typer.echo(
                    f"  paired   {p.gateway} {p.sender_id} ({p.name})  since {p.paired_at}  "
                    f"by {p.approved_by}"
                )
        if not shown:
            typer.echo("no pairing codes waiting and nobody paired")

    @pairing_app.command("approve")
    @handles_errors
    def pairing_approve(
        code: str, config: ConfigOpt = DEFAULT_CONFIG, agent: AgentOpt = None
    ) -> None:
        """Pair the sender a code was given to: their direct messages are answered from now on."""
        for book in _books(config, agent):
            found = book.approve(code, "cli")
            if found is not None:
                typer.echo(
                    f"paired {found.name} ({found.gateway} {found.sender_id}) with agent "
                    f"{book.agent}: their next direct message is answered"
                )
                return
        raise fail(
            f"no pairing code {normalise_code(code)} is waiting"
            + (f" for agent {agent}" if agent else "")
            + f" (a code expires {CODE_TTL_SECONDS // 60} min after it was given); "
            "`duragent pairing list` shows the codes waiting"
        )

    @pairing_app.command("revoke")
    @handles_errors
    def pairing_revoke(
        gateway: str, sender: str, config: ConfigOpt = DEFAULT_CONFIG, agent: AgentOpt = None
    ) -> None:
        """Forget a paired sender: their next direct message gets a new code."""
        done = [book.agent for book in _books(config, agent) if book.revoke(gateway, sender)]
        if not done:
            raise fail(
                f"{gateway} {sender} is not paired"
                + (f" with agent {agent}" if agent else " with any agent")
                + "; `duragent pairing list` shows who is"
            )
        typer.echo(f"unpaired {gateway} {sender} from agent {', '.join(done)}")
