"""``duragent upgrade``: this is a Python package, so pip (or pipx) upgrades it.

The reference replaces its own binary with one downloaded from GitHub releases. Here the
installer owns the files, and a package replacing itself would break an installation made by
pip, pipx or a distribution. The command prints the installed version and the command that
upgrades it (``--version V`` pins one); it never contacts the network, so ``--check`` says how
to check rather than checking.
"""

from __future__ import annotations

import enum
import json
import sys
from typing import Annotated

import typer

from duragent import __version__

__all__ = ["register", "upgrade_command"]


class UpgradeOutput(enum.StrEnum):
    """Output formats, as the reference's ``--format``."""

    TEXT = "text"
    JSON = "json"


def _installed_by_pipx() -> bool:
    return "/pipx/venvs/" in sys.prefix.replace("\\", "/")


def upgrade_command(version: str | None = None) -> str:
    """The shell command that upgrades this installation (to ``version`` if given)."""
    if version:
        pinned = version.removeprefix("v")
        if _installed_by_pipx():
            return f"pipx install --force duragent=={pinned}"
        return f"{sys.executable} -m pip install duragent=={pinned}"
    if _installed_by_pipx():
        return "pipx upgrade duragent"
    return f"{sys.executable} -m pip install -U duragent"


def register(app: typer.Typer) -> None:
    """Add ``upgrade`` to ``app``."""

    @app.command()
    def upgrade(
        check: Annotated[
            bool, typer.Option("--check", help="Only say how to check for a newer version.")
        ] = False,
        version: Annotated[
            str | None, typer.Option("--version", help="Target version, e.g. 0.6.0.")
        ] = None,
        fmt: Annotated[
            UpgradeOutput, typer.Option("--format", help="Output format.")
        ] = UpgradeOutput.TEXT,
    ) -> None:
        """Print the installed version and the pip command that upgrades it."""
        command = upgrade_command(version)
        check_with = "pip index versions duragent"
        if fmt is UpgradeOutput.JSON:
            result = {
                "current_version": __version__,
                "target_version": version,
                "action": "check" if check else "manual",
                "command": check_with if check else command,
            }
            typer.echo(json.dumps(result, indent=2))
            return
        typer.echo(f"duragent {__version__} is installed as a Python package.")
        if check:
            typer.echo(f"check for a newer version with: {check_with}")
        typer.echo(f"upgrade with: {command}")
        typer.echo("then restart a running server: duragent serve stop, and start it again")
