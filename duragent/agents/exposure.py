"""What of an agent may be shown to API clients, and warnings about what should not be.

``agent.yaml`` is expanded (``${VAR}``) before it is parsed, so ``metadata.description``,
``labels`` or ``spec.model.base_url`` may hold an API key or a password taken from the
environment, and ``GET /api/v1/agents/{name}`` served them. The API therefore serves every
field *as written* in the file (an expanded field shows its ``${VAR}``), and any
``scheme://user:pass@host`` is shown as ``scheme://***@host``. ``duragent doctor`` warns about
secret-looking literals in served fields and prompt files kept outside the agent's folder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from duragent.agents.spec import AgentManifest
from duragent.config.yamlio import LocatedYaml
from duragent.errors import ConfigError

__all__ = ["exposure_warnings", "redact_url_credentials", "served_value"]

_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s?#]+@")
_SECRET_LITERAL = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|sk_live_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[A-Z0-9]{16}"
    r"|AIza[A-Za-z0-9_-]{30,})"
)
_SECRET_KEY = re.compile(r"(?i)secret|token|passw|api[_-]?key|credential|private[_-]?key")


def redact_url_credentials(text: str) -> str:
    """``https://user:pass@host`` → ``https://***@host`` anywhere in ``text``."""
    return _URL_CREDENTIALS.sub("***@", text)


def _lookup(data: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def served_value(written: Any, path: Sequence[str], value: Any) -> Any:
    """``value`` as the agents API may show it.

    That is the file's own ``${VAR}`` text when the field was expanded from the environment,
    and never credentials inside a URL.
    """
    if not isinstance(value, str):
        return value
    raw = _lookup(written, path)
    if isinstance(raw, str) and "${" in raw:
        value = raw
    return redact_url_credentials(value)


def _served_fields(manifest: AgentManifest) -> list[tuple[tuple[str, ...], str]]:
    meta, model = manifest.metadata, manifest.spec.model
    fields: list[tuple[tuple[str, ...], str]] = []
    if meta.description:
        fields.append((("metadata", "description"), meta.description))
    fields.extend((("metadata", "labels", k), v) for k, v in meta.labels.items())
    for key in ("provider", "name", "base_url"):
        value = getattr(model, key)
        if isinstance(value, str):
            fields.append((("spec", "model", key), value))
    return fields


def exposure_warnings(
    agent_dir: Path, manifest: AgentManifest, written: Any, doc: LocatedYaml
) -> list[ConfigError]:
    """Warnings for ``doctor``: secrets in served fields, prompt files outside the folder."""
    found: list[ConfigError] = []
    for path, value in _served_fields(manifest):
        field = ".".join(path)
        raw = _lookup(written, path)
        from_env = isinstance(raw, str) and "${" in raw
        if _URL_CREDENTIALS.search(value):
            found.append(
                ConfigError(
                    "a URL with credentials (the agents API shows it as ***@host)",
                    file=doc.file,
                    line=doc.line_of(path),
                    field=field,
                    fix="pass credentials in an API-key variable, not in the URL",
                )
            )
        elif not from_env and (
            _SECRET_LITERAL.search(value) or (path[1] == "labels" and _SECRET_KEY.search(path[2]))
        ):
            found.append(
                ConfigError(
                    "looks like a secret, and GET /api/v1/agents/{name} serves this field",
                    file=doc.file,
                    line=doc.line_of(path),
                    field=field,
                    fix="remove it; keep secrets in environment variables the provider reads",
                )
            )
    spec = manifest.spec
    if spec.allow_external_files:
        home = agent_dir.resolve()
        for name in ("soul", "system_prompt", "instructions", "skills_dir"):
            value = getattr(spec, name)
            allowed = home.parent if name == "skills_dir" else home  # shared skills: siblings
            if value is not None and not (agent_dir / value).resolve().is_relative_to(allowed):
                found.append(
                    ConfigError(
                        "resolves outside the agent's folder (allowed by "
                        "spec.allow_external_files)",
                        file=doc.file,
                        line=doc.line_of(("spec", name)),
                        field=f"spec.{name}",
                        value=value,
                    )
                )
    return found
