"""How CLI commands fail: one ``error: …`` line, with the traceback only under ``-v``."""

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

__all__ = ["fail", "handles_errors", "set_verbosity"]

P = ParamSpec("P")
R = TypeVar("R")

_state = {"verbose": 0}

_EXPECTED = (DuragentError, OSError, ValueError, LaunchError, ApiError, httpx.HTTPError)


def set_verbosity(level: int) -> None:
    """Remember ``-v`` (tracebacks are shown when it is at least 1)."""
    _state["verbose"] = level


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
            raise fail(str(exc)) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
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
