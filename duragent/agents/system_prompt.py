"""The system prompt of an agent, built in the reference's order with templates filled.

Blocks, lower priority first, joined by blank lines: preamble (-100), soul (0), system prompt
(100), instructions (200), directives (400), skills (500), extra blocks from the caller (600;
the runtime's words only: what people, tools or summaries wrote is quoted in user messages
instead, ``context.quoting``). Templates, filled at every render: ``{{date}}`` (UTC ``YYYY-MM-DD``),
``{{time}}`` (``HH:MM UTC``), ``{{agent.name}}``, ``{{agent.home}}``; unknown ones and an
unclosed ``{{`` stay as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from duragent.agents.directives import render_directives_block
from duragent.agents.loader import Agent
from duragent.agents.skills import render_skills_block
from duragent.core.clock import utc_now

__all__ = ["COMPACT_PREAMBLE", "PREAMBLE", "build_system_prompt", "render_template"]

PREAMBLE = (
    "You interact with the world through tools when an action is needed; never claim to have "
    "run a tool you did not run. Stay within what the user asked. When a tool fails, say so "
    "and try a different approach instead of repeating the same call."
)

COMPACT_PREAMBLE = (
    "Use tools only when needed, never claim a call you did not make, and stay on task."
)
"""The preamble in windows under 8K (``context.tiers``): the same rules in a third of the tokens."""

_TEMPLATE = re.compile(r"\{\{\s*([a-zA-Z_.]+)\s*\}\}")


def render_template(text: str, agent: Agent, now: datetime | None = None) -> str:
    """Fill the known ``{{…}}`` variables of ``text``."""
    moment = now or utc_now()
    values = {
        "date": moment.strftime("%Y-%m-%d"),
        "time": moment.strftime("%H:%M UTC"),
        "agent.name": agent.name,
        "agent.home": str(agent.directory),
    }
    return _TEMPLATE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def build_system_prompt(
    agent: Agent,
    *,
    extra_blocks: Sequence[str] = (),
    now: datetime | None = None,
    compact: bool = False,
) -> str:
    """The full system prompt for one LLM call (``compact``: the short preamble)."""
    prompts = (agent.soul, agent.system_prompt, agent.instructions)
    blocks = [COMPACT_PREAMBLE if compact else PREAMBLE]
    blocks += [render_template(t.strip(), agent, now) for t in prompts if t and t.strip()]
    directives = render_directives_block(list(agent.directives))
    if directives:
        blocks.append(directives)
    skills = render_skills_block(list(agent.skills))
    if skills:
        blocks.append(skills)
    blocks.extend(b for b in extra_blocks if b.strip())
    return "\n\n".join(blocks)
