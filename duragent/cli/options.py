"""Options shared by several commands, and the root group that accepts ``-v``/``-q`` anywhere.

Each option that names a place (the config file, the port, the server) can also come from an
environment variable (``DURAGENT_CONFIG``, ``DURAGENT_PORT``, ``DURAGENT_HOST``,
``DURAGENT_SERVER``), so a shell or a service file sets it once; a flag on the command line
still wins. Ports are checked like ``server.port`` in duragent.yaml (0 to 65535) so a typo
is a usage error (exit 2) instead of a socket bound to the wrapped-around number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from duragent.config import CONFIG_FILENAME
from duragent.llm.factory import PROVIDERS

__all__ = [
    "DEFAULT_CONFIG",
    "ConfigOpt",
    "GlobalFlagsGroup",
    "HostOpt",
    "ModelOpt",
    "PortOpt",
    "ProviderOpt",
    "ServerOpt",
    "hoist_global_flags",
]

DEFAULT_CONFIG = Path(CONFIG_FILENAME)

ConfigOpt = Annotated[
    Path,
    typer.Option(
        "-c",
        "--config",
        envvar="DURAGENT_CONFIG",
        help="Path to duragent.yaml (or its directory). Env: DURAGENT_CONFIG.",
    ),
]
PortOpt = Annotated[
    int | None,
    typer.Option(
        "-p",
        "--port",
        min=0,
        max=65535,
        envvar="DURAGENT_PORT",
        help="HTTP port (0 to 65535; default: server.port). Env: DURAGENT_PORT.",
    ),
]
HostOpt = Annotated[
    str | None,
    typer.Option(
        "--host",
        envvar="DURAGENT_HOST",
        help="Bind address (default: server.host). Env: DURAGENT_HOST.",
    ),
]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "-s",
        "--server",
        envvar="DURAGENT_SERVER",
        help="Server URL (default: the workspace's). Env: DURAGENT_SERVER.",
    ),
]

ProviderOpt = Annotated[
    str | None, typer.Option("--provider", help=f"One of: {', '.join(PROVIDERS)}.")
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", help="Model name (default: the provider's).")
]

_GLOBAL_FLAGS = frozenset({"--verbose", "--quiet", "-q"})


def _is_global_flag(arg: str) -> bool:
    return arg in _GLOBAL_FLAGS or (len(arg) > 1 and arg[0] == "-" and set(arg[1:]) == {"v"})


def hoist_global_flags(args: list[str]) -> list[str]:
    """Move ``-v``/``-vv``/``--verbose``/``-q``/``--quiet`` to the front (before ``--`` only).

    They are options of the root command; people also write them after the subcommand
    (``duragent doctor -q``), which click would reject as "No such option".
    """
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if _is_global_flag(a)]
    rest = [a for a in args[:end] if not _is_global_flag(a)]
    return [*flags, *rest, *args[end:]]


class GlobalFlagsGroup(TyperGroup):
    """The root group: accepts the verbosity flags before or after the subcommand."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse with the verbosity flags moved in front of the subcommand."""
        result: list[str] = super().parse_args(ctx, hoist_global_flags(list(args)))
        return result
