"""How CLI commands fail: one ``error: …`` line, with the traceback only under ``-v``.

Exit codes: 1 for an error a person can fix, 2 for a usage error (click's), 130 for
Ctrl-C (the shell's convention for SIGINT), so scripts can tell them apart.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import httpx
import typer

from duragent.cli.client import ApiError
from duragent.cli.launcher import LaunchError
from duragent.errors import DuragentError

__all__ = ["INTERRUPTED", "fail", "handles_errors", "is_quiet", "set_verbosity"]

P = ParamSpec("P")
R = TypeVar("R")

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT)."""

_state = {"verbose": 0, "quiet": 0}

_EXPECTED = (DuragentError, OSError, ValueError, LaunchError, ApiError, httpx.HTTPError)


def set_verbosity(level: int, quiet: bool = False) -> None:
    """Remember ``-v`` (tracebacks are shown when it is at least 1) and ``-q``."""
    _state["verbose"] = level
    _state["quiet"] = int(quiet)


def is_quiet() -> bool:
    """Whether ``-q`` asked for errors only."""
    return bool(_state["quiet"])


def _describe(exc: BaseException) -> str:
    """The message, with the URL when a request failed (errno text alone names no server)."""
    if isinstance(exc, httpx.RequestError):
        try:
            url = exc.request.url
        except RuntimeError:  # no request attached
            return str(exc)
        return f"cannot reach {url}: {exc}"
    return str(exc)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` to stderr and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def handles_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn expected failures into one clear line (with a traceback under -v)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except _EXPECTED as exc:
            if _state["verbose"]:
                traceback.print_exc()
            raise fail(_describe(exc)) from None
        except KeyboardInterrupt:
            typer.echo("", err=True)
            raise typer.Exit(INTERRUPTED) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            if _state["verbose"]:
                traceback.print_exc()
                raise fail(f"unexpected {type(exc).__name__}: {exc}") from None
            raise fail(
                f"unexpected {type(exc).__name__}: {exc} (a bug: run with -v for the traceback "
                "and report it)"
            ) from None

    return wrapper
