"""Agent definitions: ``agent.yaml`` models, loading, skills, directives and the catalog.

- ``spec``: pydantic models of agent.yaml (reference-compatible fields and defaults).
- ``loader``: one folder → ``Agent`` or ``ConfigErrors``.
- ``catalog``: all folders → good agents + broken ones with their errors.
- ``skills`` / ``directives``: Markdown the system prompt is built from.
- ``system_prompt``: the agent's system prompt, assembled in the reference's order.
- ``schema``: the JSON Schema shipped for editors.
"""

from __future__ import annotations

from duragent.agents.catalog import AgentCatalog, load_catalog
from duragent.agents.loader import Agent, load_agent
from duragent.agents.spec import AgentManifest, AgentSpec, ModelSpec

__all__ = [
    "Agent",
    "AgentCatalog",
    "AgentManifest",
    "AgentSpec",
    "ModelSpec",
    "load_agent",
    "load_catalog",
]
