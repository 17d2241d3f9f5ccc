"""Policy files as ``serve`` checks them at start, and the format's typed model (its schema).

The turn path reads policies through ``policy_files.load_policy`` (merged, cached, errors
raised on the turn); ``doctor`` reads each file with ``read_policy_file``. ``check_policy_file``
is the same reading for the server's start, so a broken file or a misspelt key is said before
a turn trips on it. ``PolicyDocument`` describes the format for the JSON Schema that
``tests/config/test_fields.py`` walks (as it walks the agent's and the workspace's), so no
policy field is silently ignored; a test keeps it equal to the fields ``policy_files`` knows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from duragent.errors import ConfigError
from duragent.tools.policy_files import (
    LOCAL_POLICY_FILE,
    POLICY_FILE,
    PolicyError,
    read_policy_file,
)

__all__ = [
    "DeliverySpec",
    "NotifySpec",
    "PolicyDocument",
    "agent_policy_files",
    "check_policy_file",
    "policy_json_schema",
]


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)


class DeliverySpec(_Part):
    """``notify.deliveries[]``: where a command notification goes."""

    type: Literal["log", "webhook"]
    url: str | None = Field(default=None, description="webhook only: where to POST")


class NotifySpec(_Part):
    """``notify``: tell someone after a matching command ran (the reference's fields)."""

    enabled: bool = False
    patterns: list[str] = []
    deliveries: list[DeliverySpec] = []


class PolicyDocument(_Part):
    """A whole policy file (``policy.yaml``, ``policy.local.yaml``); every field optional."""

    api_version: Literal["duragent/v1alpha1"] = Field(
        default="duragent/v1alpha1", alias="apiVersion"
    )
    kind: Literal["Policy"] = "Policy"
    mode: Literal["dangerous", "ask", "restrict"] | None = None
    allow: list[str] = []
    deny: list[str] = []
    notify: NotifySpec | None = None


def policy_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a policy file."""
    schema = PolicyDocument.model_json_schema(by_alias=True, mode="validation")
    schema["title"] = "duragent policy file"
    return schema


def agent_policy_files(agent_dir: Path) -> tuple[Path, Path]:
    """The agent's own tiers (the workspace's ``policy.yaml`` is the third)."""
    return agent_dir / POLICY_FILE, agent_dir / LOCAL_POLICY_FILE


def check_policy_file(path: Path) -> tuple[list[ConfigError], list[ConfigError]]:
    """(errors, warnings) of the policy file at ``path``, as ``doctor`` sees them.

    Errors are what every turn of an agent using the file would fail with; warnings are keys
    nothing reads (a typo such as ``mdoe``) and fields accepted but not acted on. A missing
    file has neither.
    """
    if not path.is_file():
        return [], []
    try:
        _, warnings = read_policy_file(path)
    except PolicyError as exc:
        return [exc], []
    return [], warnings
