"""``duragent completions bash|zsh|fish|powershell|elvish``: print a shell's completion script.

The scripts and the answers to them come from Typer's own completion support (the library
the CLI is built with), not from a generator of ours: they follow every command and option
as declared, so a new flag completes without anyone updating a script. The script calls
``duragent`` back with ``_DURAGENT_COMPLETE=complete_<shell>`` set; ``main()`` passes that
variable name explicitly, so ``python -m duragent`` answers it the same way. (``shtab``
would do the same for ``argparse``, which this CLI does not use.)

Typer has no ``elvish`` (the reference's clap does), so ``ElvishComplete`` adds it to the
same protocol (click's ``ShellComplete``, as Typer's own shells): the script passes the
words typed so far in ``_DURAGENT_COMPLETE_WORDS`` (one a line) and puts the answers as
candidates; a path (for which Typer answers nothing, as bash's ``-o default`` expects) goes
to Elvish's own file completion. The answers are computed by the
same code as every other shell's.

The load hint goes to stderr, and only when stdout is a terminal: a shell's start-up file
that loads the script (``eval "$(duragent completions bash)"``) is not greeted by it.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Annotated, Any

import typer

# Typer's own completion machinery; its modules are underscored but are what its public
# ``--show-completion`` runs. tests/cli/test_help_and_completions.py fails loudly if they move.
from typer._click.shell_completion import CompletionItem, ShellComplete, add_completion_class
from typer._completion_classes import completion_init
from typer._completion_shared import get_completion_script

__all__ = ["COMPLETE_VAR", "ElvishComplete", "Shell", "register", "script"]

COMPLETE_VAR = "_DURAGENT_COMPLETE"
"""The environment variable the completion scripts set when they call ``duragent``."""


_ELVISH_SCRIPT = """\
use str
set edit:completion:arg-completer[%(prog_name)s] = {|@words|
    tmp E:%(complete_var)s = complete_elvish
    tmp E:%(complete_var)s_WORDS = (str:join "\\n" $words)
    var answers = [(%(prog_name)s | from-lines | each {|line| if (!=s $line '') { put $line } })]
    if (== (count $answers) 0) {
        edit:complete-filename $words[-1]
    }
    for line $answers {
        var kind value = (str:split &max=2 "\\t" $line)
        if (eq $kind plain) { put $value } else { edit:complete-filename $value }
    }
}"""
"""Typer answers nothing for a path (every shell then completes files, as this does)."""


class ElvishComplete(ShellComplete):
    """Elvish in click's completion protocol (the module docstring says how)."""

    name = "elvish"
    source_template = _ELVISH_SCRIPT

    def source_vars(self) -> dict[str, Any]:
        """What the script names: the program and the variable it sets."""
        return {"prog_name": self.prog_name, "complete_var": self.complete_var}

    def get_completion_args(self) -> tuple[list[str], str]:
        """The words before the one being completed (the program's name left out), and it."""
        words = os.environ.get(f"{self.complete_var}_WORDS", "").split("\n")
        return words[1:-1], words[-1] if len(words) > 1 else ""

    def format_completion(self, item: CompletionItem) -> str:
        """``kind<TAB>value``: ``plain`` is a candidate, ``file``/``dir`` a path to complete."""
        return f"{item.type}\t{item.value}"


completion_init()  # Typer's completers for bash/zsh/fish/powershell (add_completion is off)
add_completion_class(ElvishComplete, ElvishComplete.name)


class Shell(enum.StrEnum):
    """Shells a script can be printed for."""

    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"
    POWERSHELL = "powershell"
    ELVISH = "elvish"


def script(shell: Shell) -> str:
    """The completion script for ``shell``."""
    if shell is Shell.ELVISH:
        return _ELVISH_SCRIPT % {"prog_name": "duragent", "complete_var": COMPLETE_VAR}
    return get_completion_script(prog_name="duragent", complete_var=COMPLETE_VAR, shell=shell)


_HOW = {
    Shell.BASH: 'eval "$(duragent completions bash)"  # e.g. in ~/.bashrc',
    Shell.ZSH: 'eval "$(duragent completions zsh)"  # in ~/.zshrc, after compinit',
    Shell.FISH: "duragent completions fish > ~/.config/fish/completions/duragent.fish",
    Shell.POWERSHELL: "duragent completions powershell | Out-String | Invoke-Expression",
    Shell.ELVISH: "eval (duragent completions elvish | slurp)  # in ~/.config/elvish/rc.elv",
}


def register(app: typer.Typer) -> None:
    """Add ``completions`` to ``app``."""

    @app.command()
    def completions(
        shell: Annotated[Shell, typer.Argument(help="The shell to print the script for.")],
    ) -> None:
        """Print a shell completion script (how to load it goes to stderr, on a terminal)."""
        typer.echo(script(shell))
        if sys.stdout.isatty():
            typer.echo(f"# load it with: {_HOW[shell]}", err=True)
