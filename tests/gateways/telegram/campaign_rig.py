"""The serving side of the Telegram restart campaign: a workspace and a killable ``duragent serve``.

The campaign (``restart_campaign.py``) kills the serving process with SIGKILL, so it runs as a
real subprocess, started the way a user starts it; the fake Telegram and the fake model live
in the campaign's own process and outlive every kill. Two agents share the bot:

- ``dm`` answers direct messages with the offline model (a reply quotes the message; a
  ``!call bash {...}`` line is a tool call) and asks before every ``bash`` (``mode: ask``);
- ``group`` answers mentions in groups through a model server the campaign scripts, which
  repeats the message and lists the group chatter it found in the request, so a reply shows
  whether the buffered chatter reached the model. Its queue is ``sequential`` without
  debounce, so each mention gets a reply of its own even while an earlier one runs.
"""

from __future__ import annotations

from pathlib import Path

from tests.gateways.serve_process import ServeProcess

__all__ = ["TOKEN", "ServeProcess", "write_campaign_agents", "write_campaign_workspace"]

TOKEN = "123456:" + "C" * 35
"""A token that looks real (the config checks its shape); the fake accepts only this one."""

_CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  telegram:
    bot_token: '{token}'
    base_url: {base_url}
    poll_timeout_seconds: 1
    max_messages_per_second: 100000
    max_messages_per_minute_per_group: 100000
    max_messages_per_second_per_chat: 100000
routes:
  - match: {{chat_type: dm}}
    agent: dm
  - match: {{chat_type: group}}
    agent: group
"""

_DM_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: dm
spec:
  model:
    provider: offline
    name: duragent-offline
  tools:
    - type: builtin
      name: bash
  access:  # one writer stands for every chat's people: no per-sender rate
    quotas: {messages_per_sender_per_minute: 0}
"""

_GROUP_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: group
spec:
  model:
    provider: fake
    name: gpt-4o
    base_url: {llm_url}
    max_input_tokens: 64000
    max_output_tokens: 500
  access:
    quotas: {{messages_per_sender_per_minute: 0}}  # one writer stands for every chat's people
    groups:
      activation: mention
      queue:
        mode: sequential
        max_pending: 50
        debounce:
          enabled: false
"""

_ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


def write_campaign_workspace(root: Path, *, telegram_url: str, llm_url: str) -> Path:
    """Write the campaign's workspace under ``root``; returns its ``duragent.yaml``."""
    config = root / "duragent.yaml"
    config.write_text(_CONFIG.format(token=TOKEN, base_url=telegram_url))
    write_campaign_agents(root, llm_url)
    return config


def write_campaign_agents(root: Path, llm_url: str) -> None:
    """The campaign's two agents (``dm``, ``group``), the same on every platform."""
    dm = root / ".duragent" / "agents" / "dm"
    dm.mkdir(parents=True, exist_ok=True)
    (dm / "agent.yaml").write_text(_DM_AGENT)
    (dm / "policy.yaml").write_text(_ASK)
    group = root / ".duragent" / "agents" / "group"
    group.mkdir(parents=True, exist_ok=True)
    (group / "agent.yaml").write_text(_GROUP_AGENT.format(llm_url=llm_url))
