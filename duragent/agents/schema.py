"""The JSON Schema of ``agent.yaml``, generated from the models (editors validate with it).

Regenerate the shipped file with ``python -m duragent.agents.schema``; a test fails when the
shipped file and the models disagree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duragent.agents.spec import AgentManifest

__all__ = ["SCHEMA_PATH", "agent_json_schema", "render_schema"]

SCHEMA_PATH = Path(__file__).with_name("schema") / "agent.schema.json"


def agent_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) for agent.yaml."""
    schema = AgentManifest.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://duragent.dev/schema/agent.schema.json"
    schema["title"] = "duragent agent.yaml"
    return schema


def render_schema() -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(agent_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    SCHEMA_PATH.write_text(render_schema(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
