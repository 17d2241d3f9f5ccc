"""``duragent upgrade``: says what upgrades this installation; it never changes a file.

The reference replaces its own binary with one downloaded from GitHub releases. Here the
installer owns the files (pip, pipx, a distribution, or git for a clone), and a package
replacing itself would break an installation made by any of them. The command prints the
installed version, where it runs from (``installation``) and the command that upgrades it
(``--version V`` pins one): ``git pull`` and the editable install again in a clone, pip or
pipx otherwise. It never contacts the network, so ``--check`` says how to check.

Refused, with what to do instead (a usage error, exit 2, rather than flags that do nothing):
``--full``/``--core`` (the reference's two binaries; this package is one build, optional
parts are pip extras) and ``--restart`` with its ``-c``/``-p`` (nothing was upgraded to
restart into; the person restarts the server after upgrading, as they started it).
"""

from __future__ import annotations

import enum
import json
import shlex
import sys
from typing import Annotated

import typer

from duragent import __version__
from duragent.cli.errors import fail
from duragent.cli.installation import Installation, Kind, find_installation

__all__ = ["check_command", "register", "upgrade_command"]


class UpgradeOutput(enum.StrEnum):
    """Output formats, as the reference's ``--format``."""

    TEXT = "text"
    JSON = "json"


def upgrade_command(version: str | None = None, installation: Installation | None = None) -> str:
    """The shell command that upgrades ``installation`` (to ``version`` if given)."""
    found = installation or find_installation()
    pinned = version.removeprefix("v") if version else None
    python = shlex.quote(sys.executable)
    root = shlex.quote(str(found.root))
    reinstall = f"{python} -m pip install -e {root}"
    match found.kind:
        case Kind.GIT:
            if pinned:
                get = f"git -C {root} fetch --tags && git -C {root} checkout v{pinned}"
            else:
                get = f"git -C {root} pull"
            return f"{get} && {reinstall}" if found.editable else get
        case Kind.SOURCE:
            return reinstall  # once the tree holds the new files
        case Kind.PIPX:
            return f"pipx install --force duragent=={pinned}" if pinned else "pipx upgrade duragent"
        case Kind.PIP:
            if pinned:
                return f"{python} -m pip install duragent=={pinned}"
            return f"{python} -m pip install -U duragent"


def check_command(installation: Installation | None = None) -> str:
    """The shell command that shows whether a newer version exists."""
    found = installation or find_installation()
    if found.kind is Kind.GIT:
        root = shlex.quote(str(found.root))
        return f"git -C {root} fetch && git -C {root} log --oneline HEAD..@{{u}}"
    return "pip index versions duragent"


def _where(found: Installation) -> str:
    editable = " (an editable install)" if found.editable else ""
    match found.kind:
        case Kind.GIT:
            return f"duragent {__version__} runs from the git checkout {found.root}{editable}."
        case Kind.SOURCE:
            return (
                f"duragent {__version__} runs from the source tree {found.root}{editable}, "
                "not a git checkout: put a newer release's files there first."
            )
        case Kind.PIPX | Kind.PIP:
            return f"duragent {__version__} is installed as a Python package."


def _refused(full: bool, core: bool, restart: bool, config: str | None, port: int | None) -> None:
    """Fail (exit 2) on the reference's flags that have no meaning here, saying what to do."""
    variant = "--full" if full else "--core" if core else None
    if variant:
        raise fail(
            f"{variant} chooses one of the reference's two binaries (full: with `chat` and "
            "`attach`; core: without). This package is one build with every command; "
            "optional parts are pip extras, e.g. pip install 'duragent[postgres]'",
            code=2,
        )
    asked = [
        flag for flag, given in (("--restart", restart), ("-c", config), ("-p", port)) if given
    ]
    if asked:
        raise fail(
            f"{'/'.join(asked)}: upgrade never replaces the running code, so there is "
            f"nothing to restart into yet. Upgrade with `{upgrade_command()}`, then restart "
            "the workspace's server: `duragent serve stop` and start it as before (or your "
            "service manager's restart)",
            code=2,
        )


_VARIANT = "Not offered (the reference's binary variants): says what to install instead."
_RESTART = "Not offered (restarts after a self-update): says how to restart after upgrading."


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
        full: Annotated[bool, typer.Option("--full", hidden=True, help=_VARIANT)] = False,
        core: Annotated[bool, typer.Option("--core", hidden=True, help=_VARIANT)] = False,
        restart: Annotated[bool, typer.Option("--restart", hidden=True, help=_RESTART)] = False,
        config: Annotated[
            str | None, typer.Option("-c", "--config", hidden=True, help=_RESTART)
        ] = None,
        port: Annotated[
            int | None, typer.Option("-p", "--port", hidden=True, help=_RESTART)
        ] = None,
    ) -> None:
        """Print the installed version, where it runs from, and the command that upgrades it."""
        _refused(full, core, restart, config, port)
        found = find_installation()
        command = upgrade_command(version, found)
        check_with = check_command(found)
        if fmt is UpgradeOutput.JSON:
            result = {
                "current_version": __version__,
                "target_version": version,
                "install": found.kind.value,
                "source": str(found.root) if found.root else None,
                "action": "check" if check else "manual",
                "command": check_with if check else command,
            }
            typer.echo(json.dumps(result, indent=2))
            return
        typer.echo(_where(found))
        if check:
            typer.echo(f"check for a newer version with: {check_with}")
        typer.echo(f"upgrade with: {command}")
        typer.echo("then restart a running server: duragent serve stop, and start it again")
