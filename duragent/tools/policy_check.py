"""Policy files as ``serve`` and ``doctor`` check them: their format, its schema, the warnings.

The turn path reads policies through ``policy_files.load_policy`` (merged, cached, errors
raised on the turn). This module describes one file as a person wrote it instead: the typed
model of the format (its JSON Schema is walked by ``tests/config/test_fields.py`` like the
agent's and the workspace's, so no policy field is silently ignored), and ``check_policy_file``,
which returns a file's errors and its warnings (unknown keys, fields not acted on) so the
server's start and ``duragent doctor`` say them before a turn trips on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from duragent.config.fields import unsupported_warnings
from duragent.config.validation import unknown_key_warnings
from duragent.errors import ConfigError, ConfigErrors
from duragent.tools.policy_files import LOCAL_POLICY_FILE, POLICY_FILE, _parse_tier, _read

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
    """(errors, warnings) of the policy file at ``path``; a missing file has neither.

    Errors are what every turn of an agent using the file would fail with; warnings are keys
    nothing reads (a typo such as ``mdoe``) and fields accepted but not acted on.
    """
    if not path.exists():
        return [], []
    try:
        _, doc = _read(path)
        _parse_tier(doc)
    except ConfigError as exc:
        return (exc.errors if isinstance(exc, ConfigErrors) else [exc]), []
    warnings = unsupported_warnings("policy", doc)
    if isinstance(doc.data, dict):
        try:
            model = PolicyDocument.model_validate(doc.data)
        except ValidationError:
            pass  # details the turn path does not check (a delivery's type): no key warnings
        else:
            warnings = unknown_key_warnings(model, doc) + warnings
    return [], warnings
