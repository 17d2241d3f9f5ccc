"""Where discord.py talks to: discord.com, or a Discord-compatible server (``base_url``).

discord.py has no per-client address: its REST routes are built on the class attribute
``Route.BASE`` and its websocket connects to ``DiscordWebSocket.DEFAULT_GATEWAY`` (it no
longer asks ``/gateway/bot`` for a single connection). ``use_api`` sets both for a
``base_url`` (the fake server in tests, a proxy) and returns how to put them back; with no
``base_url`` it changes nothing. One process serves one Discord bot, so a process-wide
setting is no loss.
"""

from __future__ import annotations

from collections.abc import Callable

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import INTERNAL_API_VERSION, Route

__all__ = ["DISCORD_API", "use_api"]

DISCORD_API = "https://discord.com"


def use_api(base_url: str | None) -> Callable[[], None]:
    """Point discord.py at ``base_url`` (REST ``/api/v10``, websocket ``/gateway``); undo."""
    base, gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY

    def restore() -> None:
        Route.BASE = base
        DiscordWebSocket.DEFAULT_GATEWAY = gateway

    if base_url is None:
        return restore
    root = base_url.rstrip("/")
    Route.BASE = f"{root}/api/v{INTERNAL_API_VERSION}"
    scheme = "wss" if root.startswith("https://") else "ws"
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(f"{scheme}://{root.split('://', 1)[1]}/gateway")
    return restore
