"""``duragent login <provider>``: not offered; it says what to do instead.

The reference's ``login anthropic`` runs an OAuth flow with a consumer subscription's client
and stores the tokens in ``~/.duragent/auth.json`` (taking precedence over
``ANTHROPIC_API_KEY``). This package does not: that flow belongs to another application's
OAuth client, cannot be tested without the real service, and would put a second, hidden
source of credentials beside the environment variables every provider here reads. The
command exists so a user coming from the reference gets the answer instead of "No such
command" (see specs/202611240825.cli-parity.md).
"""

from __future__ import annotations

from typing import Annotated

import typer

from duragent.cli.errors import fail
from duragent.llm.factory import PROVIDERS

__all__ = ["register"]


def advice(provider: str) -> str:
    """What to do instead of logging in to ``provider``."""
    info = PROVIDERS.get(provider)
    if info is not None and info.key_env:
        how = f"export {info.key_env}=… (an API key) before `duragent serve`"
    elif info is not None:
        how = f"{provider} needs no credentials"
    else:
        known = ", ".join(p for p, i in PROVIDERS.items() if i.key_env)
        how = f"unknown provider {provider!r}; providers with keys: {known}"
    return (
        f"`duragent login` is not supported by this version (no OAuth logins; "
        f"~/.duragent/auth.json is not read): {how}"
    )


def register(app: typer.Typer) -> None:
    """Add ``login`` to ``app``."""

    @app.command()
    def login(
        provider: Annotated[str, typer.Argument(help="Provider, e.g. anthropic.")],
    ) -> None:
        """Not supported: prints which environment variable holds the provider's API key."""
        raise fail(advice(provider))
