from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from duragent.agents import load_agent
from duragent.agents.system_prompt import PREAMBLE, build_system_prompt

YAML = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
spec:
  model:
    provider: offline
    name: duragent-offline
  soul: SOUL.md
  system_prompt: SYSTEM_PROMPT.md
  instructions: INSTRUCTIONS.md
"""

NOW = datetime(2026, 11, 24, 9, 5, tzinfo=UTC)


def test_blocks_come_in_the_reference_order_with_templates_filled(
    write_agent: Callable[..., Path],
) -> None:
    folder = write_agent(
        "helper",
        YAML,
        **{
            "SOUL.md": "I am {{ agent.name }}.\n",
            "SYSTEM_PROMPT.md": "Today is {{date}}, {{time}}; {{unknown}} and {{ stay.\n",
            "INSTRUCTIONS.md": "   \n",
        },
    )
    prompt = build_system_prompt(load_agent(folder), extra_blocks=("group: 3 people", " "), now=NOW)
    assert prompt.split("\n\n") == [
        PREAMBLE,
        "I am helper.",
        "Today is 2026-11-24, 09:05 UTC; {{unknown}} and {{ stay.",
        "group: 3 people",
    ]
