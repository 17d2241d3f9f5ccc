"""The month's workspace: the year's, served to a crowd as a careful owner would serve it.

Written by ``bench.year.workspace.write_workspace`` first, then changed:

- **secrets out of files**: the bot token is ``${STRANGERS_BOT_TOKEN}`` in ``duragent.yaml``
  and the model key is ``FAKE_API_KEY`` (``SECRETS``), both in the serving process's
  environment only, as a deployment keeps them;
- **the sandbox**: ``sandbox.mode: bubblewrap`` (no network, the agent's definition read-only,
  the workspace's files not there), media caps (a document over 1 MB is refused) and voice
  notes transcribed by the scripted model server;
- **people**: the two owners in every agent's ``spec.access.owners``; the DM agent ``small``
  takes the plan's DMs only (``dm.policy: allowlist``); a new agent ``desk`` (the DM model)
  takes the owners' DMs and the strangers routed to it (``dm.policy: pairing``); the group
  agent ``large`` blocks the blocked members, takes ``RATE`` messages a minute from one
  person, and has ``bash`` (asks first), ``session`` and ``schedule``;
- ``small`` reads documents it was sent with ``bash cat files/…`` and sends them back with
  ``send_file`` without asking; ``large``
  runs ``session`` and ``schedule`` without asking (they reach the caller's chat only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.strangers.attacks import RATE
from bench.strangers.cast import BLOCKED, OWNERS
from bench.year.workspace import TOKEN, write_workspace
from duragent.testing.discord_campaign import TOKEN as DISCORD_TOKEN

__all__ = ["SECRETS", "write_strangers_workspace"]

SECRETS = {
    "FAKE_API_KEY": "sk-strangers-provider-key-0f9e8d7c6b5a",
    "STRANGERS_BOT_TOKEN": TOKEN,
    "STRANGERS_DISCORD_TOKEN": DISCORD_TOKEN,
}
"""Environment of the serving process: what must never reach a person, a log or the model."""

_POLICY = (
    "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\nallow:\n"
    '  - "bash:printf *"\n  - "bash:cat files/*"\n'
    '  - "builtin:memory:*"\n  - "builtin:tool_output:*"\n  - "builtin:send_file:*"\n'
)


def _owners() -> dict[str, list[str]]:
    return {"telegram": [str(o) for o in OWNERS]}


def write_strangers_workspace(
    root: Path,
    *,
    dms: list[int],
    pairing_strangers: list[int],
    transcription_url: str,
    discord: tuple[str, list[str]] | None = None,
    **year: Any,
) -> Path:
    """Write the month's workspace under ``root``; returns its ``duragent.yaml``.

    ``dms``: the plan's DM chats (the allow-list); ``pairing_strangers``: the strangers whose
    DMs reach the pairing agent; ``discord``: the fake Discord's URL and the ids of the
    people writing its DMs (allow-listed), or None (no Discord); ``year``:
    ``write_workspace``'s own arguments.
    """
    config_path = write_workspace(root, **year)
    config = json.loads(config_path.read_text())
    config["gateways"]["telegram"]["bot_token"] = "${STRANGERS_BOT_TOKEN}"
    allowed = [str(c) for c in dms]
    if discord is not None:
        url, writers = discord
        config["gateways"]["discord"] = {"bot_token": "${STRANGERS_DISCORD_TOKEN}", "base_url": url}
        allowed += writers
    config["sandbox"] = {"mode": "bubblewrap"}
    config["media"] = {
        "max_bytes": {"document": "1MB"},
        "transcription": {
            "provider": "openai",
            "base_url": transcription_url,
            "model": "whisper-1",
            "api_key_env": "FAKE_API_KEY",
        },
    }
    desk = [{"match": {"chat_type": "dm", "chat_id": str(c)}, "agent": "desk"} for c in OWNERS]
    desk += [
        {"match": {"chat_type": "dm", "chat_id": str(c)}, "agent": "desk"}
        for c in pairing_strangers
    ]
    config["routes"] = desk + config["routes"]
    config_path.write_text(json.dumps(config))
    agents = root / ".duragent" / "agents"
    small = _load(agents / "small")
    small["spec"].setdefault("access", {}).update(
        owners=_owners(), dm={"policy": "allowlist", "allowlist": allowed}
    )
    small["spec"]["tools"] = [*small["spec"]["tools"], {"type": "builtin", "name": "send_file"}]
    _save(agents / "small", small)
    (agents / "small" / "policy.yaml").write_text(_POLICY)
    desk_doc = json.loads(json.dumps(small))
    desk_doc["metadata"]["name"] = "desk"
    desk_doc["spec"]["access"] = {"owners": _owners(), "dm": {"policy": "pairing"}}
    desk_doc["spec"]["tools"] = []  # a stranger just paired gets no tools
    (agents / "desk").mkdir(exist_ok=True)
    _save(agents / "desk", desk_doc)
    large = _load(agents / "large")
    access = large["spec"]["access"]
    access["owners"] = _owners()
    access["quotas"] = {"messages_per_sender_per_minute": RATE}
    access["groups"]["sender_overrides"] = {str(b): "block" for b in BLOCKED}
    large["spec"]["tools"] = [
        {"type": "builtin", "name": name} for name in ("bash", "session", "schedule")
    ]
    _save(agents / "large", large)
    (agents / "large" / "policy.yaml").write_text(
        _POLICY + '  - "builtin:session:*"\n  - "builtin:schedule:*"\n'
    )
    ops = _load(agents / "ops")
    ops["spec"]["access"] = {"owners": _owners()}
    _save(agents / "ops", ops)
    return config_path


def _load(agent: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((agent / "agent.yaml").read_text())
    return document


def _save(agent: Path, document: dict[str, Any]) -> None:
    (agent / "agent.yaml").write_text(json.dumps(document))
