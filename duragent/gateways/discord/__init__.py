"""Discord front end (discord.py 2.7). Never imports another front end.

``build_discord_gateway`` is what the runtime calls (``assemble``); ``service`` is the
runtime's service, ``messages`` translates discord.py's messages and presses, ``lanes`` keeps
each chat's order, ``outbound`` sends, ``split`` cuts replies at 2,000 characters, ``buttons``
draws approvals that survive a restart, ``endpoints`` points discord.py at ``base_url``. See
``specs/202611240530.discord-gateway.md``.
"""

from __future__ import annotations

from duragent.gateways.discord.assemble import build_discord_gateway
from duragent.gateways.discord.service import DiscordGateway

__all__ = ["DiscordGateway", "build_discord_gateway"]
