"""``duragent completions bash|zsh|fish|powershell``: print a shell's completion script.

The scripts and the answers to them come from Typer's own completion support (the library
the CLI is built with), not from a generator of ours: they follow every command and option
as declared, so a new flag completes without anyone updating a script. The script calls
``duragent`` back with ``_DURAGENT_COMPLETE=complete_<shell>`` set; ``main()`` passes that
variable name explicitly, so ``python -m duragent`` answers it the same way. (``shtab``
would do the same for ``argparse``, which this CLI does not use.) The reference also offers
``elvish``, which Typer does not; asking for it is a clear error.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

# Typer's own completion machinery; its modules are underscored but are what its public
# ``--show-completion`` runs. tests/cli/test_completions.py fails loudly if they move.
from typer._completion_classes import completion_init
from typer._completion_shared import get_completion_script

__all__ = ["COMPLETE_VAR", "Shell", "register", "script"]

COMPLETE_VAR = "_DURAGENT_COMPLETE"
"""The environment variable the completion scripts set when they call ``duragent``."""

completion_init()  # Typer's completers for bash/zsh/fish/powershell (add_completion is off)


class Shell(enum.StrEnum):
    """Shells a script can be printed for."""

    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"
    POWERSHELL = "powershell"


def script(shell: Shell) -> str:
    """The completion script for ``shell``."""
    return get_completion_script(prog_name="duragent", complete_var=COMPLETE_VAR, shell=shell)


_HOW = {
    Shell.BASH: 'eval "$(duragent completions bash)"  # e.g. in ~/.bashrc',
    Shell.ZSH: 'eval "$(duragent completions zsh)"  # in ~/.zshrc, after compinit',
    Shell.FISH: "duragent completions fish > ~/.config/fish/completions/duragent.fish",
    Shell.POWERSHELL: "duragent completions powershell | Out-String | Invoke-Expression",
}


def register(app: typer.Typer) -> None:
    """Add ``completions`` to ``app``."""

    @app.command()
    def completions(
        shell: Annotated[Shell, typer.Argument(help="The shell to print the script for.")],
    ) -> None:
        """Print a shell completion script (to stdout; how to load it goes to stderr)."""
        typer.echo(script(shell))
        typer.echo(f"# load it with: {_HOW[shell]}", err=True)
