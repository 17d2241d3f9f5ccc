"""The simulated year's workspace: the agents, their schedules, and the Telegram section.

- ``small`` answers DMs through the scripted model's 8K window (``gpt-4o-mini``), summaries
  on, ``bash`` asked before it runs except ``printf`` (allowed by the policy), so some tool
  calls need approval and some do not; the memory tool and ``tool_output`` (reads a cut
  output back) are allowed without asking;
- ``large`` answers group mentions through the 32K window (``gpt-4o``), sequential queue
  without debounce (one reply per mention, as in the restart campaign), keeping group chatter
  for ``CHATTER_HOURS`` (the default 24 h is on the simulated calendar, where a second of
  real time is hours: a mention that waits a few seconds in its group's queue would lose the
  chatter written just before it);
- ``ops`` owns the declared schedules: two daily message jobs at 02:30 in New York and in
  Berlin (both spring gaps, Berlin's repeated hour in autumn) and a task every
  ``every_seconds`` that runs a model turn, and (``pulse``) a second task every 15
  minutes on some days of one month (``pulse_expr``), each into an ``ops`` chat no one
  writes in, each with ``retry`` (``RETRY``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.year.model import DM_MODEL, GROUP_MODEL, WINDOWS

__all__ = [
    "CHATTER_HOURS",
    "CRON_ZONES",
    "OPS_CHATS",
    "PULSE_CHAT",
    "PULSE_EVERY",
    "TASK_CHAT",
    "TOKEN",
    "pulse_expr",
    "write_workspace",
]

TOKEN = "123456:" + "Y" * 35
CRON_EXPR = "30 2 * * *"
CRON_ZONES = {"ny": ("America/New_York", 9001), "berlin": ("Europe/Berlin", 9002)}
TASK_CHAT = 9003
PULSE_CHAT = 9004
PULSE_EVERY = 900
"""The pulse: a second recurring task, every 15 simulated minutes, on ``pulse_days`` days."""
RETRY = {"max_retries": 2, "initial_delay_ms": 1000, "max_delay_ms": 5000}
"""Without ``retry`` a run a kill cuts before it wrote anything is ``interrupted`` and its due
time never delivered (the scheduler spec's rule); with it, that run is run again (safe:
nothing was written), as a deployment that must not miss a day configures it."""
OPS_CHATS = {chat for _zone, chat in CRON_ZONES.values()} | {TASK_CHAT, PULSE_CHAT}


CHATTER_HOURS = 14 * 24
"""How long the group agent keeps chatter for a mention (module docstring)."""


def _agent(name: str, model: str, llm_url: str, spec: dict[str, Any]) -> str:
    document = {
        "apiVersion": "duragent/v1alpha1",
        "kind": "Agent",
        "metadata": {"name": name},
        "spec": {
            "model": {
                "provider": "fake",
                "name": model,
                "base_url": llm_url,
                "max_input_tokens": WINDOWS[model],
                "max_output_tokens": 1000,
            },
            **spec,
        },
    }
    return json.dumps(document)  # JSON is YAML


def pulse_expr(month: int, days: int) -> str:
    """Every 15 minutes (UTC) from the 2nd of ``month`` for ``days`` days (at most 27)."""
    if not 1 <= days <= 27:
        raise ValueError(f"pulse_days must be 1 to 27, got {days}")
    return f"*/{PULSE_EVERY // 60} * 2-{1 + days} {month} *"


def write_workspace(
    root: Path,
    *,
    telegram_url: str,
    llm_url: str,
    every_seconds: int,
    ttl_hours: int = 168,
    pulse: tuple[int, int] | None = None,
) -> Path:
    """Write the year's workspace under ``root``; returns its ``duragent.yaml``.

    ``pulse``: (month, days) of the task every 15 minutes (``pulse_expr``), or none;
    ``ttl_hours``: ``sessions.ttl_hours``, on the simulated calendar (``ttl.py``).
    """
    config = {
        "server": {"host": "127.0.0.1"},
        "gateways": {
            "telegram": {
                "bot_token": TOKEN,
                "base_url": telegram_url,
                "poll_timeout_seconds": 1,
                "max_messages_per_second": 100000,
                "max_messages_per_minute_per_group": 100000,
                "max_messages_per_second_per_chat": 100000,
            }
        },
        "routes": [
            {"match": {"chat_type": "dm"}, "agent": "small"},
            {"match": {"chat_type": "group"}, "agent": "large"},
        ],
        "scheduler": {"recurring_grace_seconds": 86400},
        "sessions": {"ttl_hours": ttl_hours},
    }
    (root / "duragent.yaml").write_text(json.dumps(config))
    agents = root / ".duragent" / "agents"
    session = {"on_disconnect": "pause", "context": {"summaries": {"enabled": True}}}
    small = _agent(
        "small",
        DM_MODEL,
        llm_url,
        {"tools": [{"type": "builtin", "name": "bash"}], "memory": {}, "session": session},
    )
    large = _agent(
        "large",
        GROUP_MODEL,
        llm_url,
        {
            "session": session,
            "access": {
                "quotas": {"messages_per_sender_per_minute": 0},  # bursts on a simulated clock
                "groups": {
                    "activation": "mention",
                    "context_buffer": {"max_age_hours": CHATTER_HOURS},
                    "queue": {
                        "mode": "sequential",
                        "max_pending": 50,
                        "debounce": {"enabled": False},
                    },
                },
            },
        },
    )
    schedules: list[dict[str, Any]] = [
        {
            "name": name,
            "schedule": {"cron": {"expr": CRON_EXPR, "tz": zone}},
            "destination": {"gateway": "telegram", "chat_id": str(chat)},
            "payload": {"message": {"message": f"good morning from {zone}"}},
            "retry": RETRY,
        }
        for name, (zone, chat) in CRON_ZONES.items()
    ]
    schedules.append(
        {
            "name": "digest",
            "schedule": {"every": {"every_seconds": every_seconds}},
            "destination": {"gateway": "telegram", "chat_id": str(TASK_CHAT)},
            "payload": {"task": {"task": "write the digest of the last hours"}},
            "retry": RETRY,
        }
    )
    if pulse is not None:
        schedules.append(
            {
                "name": "pulse",
                "schedule": {"cron": {"expr": pulse_expr(*pulse), "tz": "UTC"}},
                "destination": {"gateway": "telegram", "chat_id": str(PULSE_CHAT)},
                "payload": {"task": {"task": "take the pulse of the last minutes"}},
                "retry": RETRY,
            }
        )
    ops = _agent("ops", GROUP_MODEL, llm_url, {"schedules": schedules})
    for name, text in (("small", small), ("large", large), ("ops", ops)):
        (agents / name).mkdir(parents=True, exist_ok=True)
        (agents / name / "agent.yaml").write_text(text)
    policy = (
        "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\nallow:\n"
        '  - "bash:printf *"\n  - "builtin:memory:*"\n  - "builtin:tool_output:*"\n'
    )
    (agents / "small" / "policy.yaml").write_text(policy)
    return root / "duragent.yaml"
