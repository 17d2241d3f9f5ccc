"""The serving side of the Discord restart campaign: its workspace, and what the store recorded.

Two agents share the bot, as in the Telegram campaign (``tests/gateways/telegram/
campaign_rig.py`` explains why): ``dm`` (offline model, asks before every ``bash``) for
direct messages and ``group`` (the campaign's scripted model, ``sequential`` queue without
debounce) for guild channels. ``duragent serve`` is ``tests.gateways.serve_process.
ServeProcess`` waiting for the ``discord`` gateway.

``recorded_message_ids`` reads which Discord messages the serving processes recorded: Discord
sends a message once, to whichever connection is open, and never again, so a message that
reached a process killed before it wrote the message down is gone with it. Only the store
tells that apart from a message duragent accepted and then failed to answer (a real loss).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.gateways.discord.rig import TOKEN
from tests.gateways.telegram.campaign_rig import write_campaign_agents

__all__ = ["TOKEN", "recorded_message_ids", "write_campaign_workspace"]

_CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  discord:
    bot_token: '{token}'
    base_url: {base_url}
routes:
  - match: {{chat_type: dm}}
    agent: dm
  - match: {{chat_type: group}}
    agent: group
"""

_RECORDED = re.compile(r'"platform_message_id":\s*"(\d+)"')


def write_campaign_workspace(root: Path, *, discord_url: str, llm_url: str) -> Path:
    """Write the campaign's workspace under ``root``; returns its ``duragent.yaml``."""
    config = root / "duragent.yaml"
    config.write_text(_CONFIG.format(token=TOKEN, base_url=discord_url))
    write_campaign_agents(root, llm_url)
    return config


def recorded_message_ids(root: Path) -> set[str]:
    """Ids of the platform messages any session under ``root`` recorded (live logs and
    archives; a torn last line, left by a kill mid-write, does not count)."""
    found: set[str] = set()
    for log in root.rglob("events*.jsonl"):
        for line in log.read_text(errors="replace").splitlines():
            if line.endswith("}"):
                found.update(_RECORDED.findall(line))
    return found
