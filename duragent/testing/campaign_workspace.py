"""What every restart campaign's workspace holds, and what its store recorded.

Two agents share the bot on every platform (``write_campaign_agents``):

- ``dm`` answers direct messages with the offline model (a reply quotes the message; a
  ``!call bash {...}`` line is a tool call) and asks before every ``bash`` (``mode: ask``);
- ``group`` answers mentions in groups through a model server the campaign scripts
  (``campaign_verdict.group_model``), which repeats the message and lists the group chatter it
  found in the request, so a reply shows whether the buffered chatter reached the model. Its
  queue is ``sequential`` without debounce, so each mention gets a reply of its own even while
  an earlier one runs.

``recorded_message_ids`` reads which platform messages the serving processes recorded: a
platform that sends a message once (Discord, a gateway without ``ack``) loses a message that
reached a process killed before it wrote the message down. Only the store tells that apart
from a message duragent accepted and then failed to answer (a real loss).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["recorded_message_ids", "write_campaign_agents"]

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

_RECORDED = re.compile(r'"platform_message_id":\s*"(\d+)"')


def write_campaign_agents(root: Path, llm_url: str) -> None:
    """The campaign's two agents (``dm``, ``group``), the same on every platform."""
    dm = root / ".duragent" / "agents" / "dm"
    dm.mkdir(parents=True, exist_ok=True)
    (dm / "agent.yaml").write_text(_DM_AGENT)
    (dm / "policy.yaml").write_text(_ASK)
    group = root / ".duragent" / "agents" / "group"
    group.mkdir(parents=True, exist_ok=True)
    (group / "agent.yaml").write_text(_GROUP_AGENT.format(llm_url=llm_url))


def recorded_message_ids(root: Path) -> set[str]:
    """Ids of the platform messages any session under ``root`` recorded.

    Live logs and archives; a torn last line, left by a kill mid-write, does not count.
    """
    found: set[str] = set()
    for log in root.rglob("events*.jsonl"):
        for line in log.read_text(errors="replace").splitlines():
            if line.endswith("}"):
                found.update(_RECORDED.findall(line))
    return found
