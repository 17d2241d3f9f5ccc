"""One policy file (a tier) read and checked exactly as a turn uses it.

``policy_files`` merges the three tiers and writes "allow always", ``policy_quarantine`` sets a
broken ``policy.local.yaml`` aside; both need the same answer to "can a turn use this file,
and what does it say?", so that answer lives here, once: the parse, the field checks with
their errors (file, line, field, value and the fix), and ``doctor``'s reading of one tier with
the warnings a run ignores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duragent.config.fields import unsupported_warnings
from duragent.config.yamlio import LocatedYaml, load_yaml_text, read_text
from duragent.errors import ConfigError
from duragent.tools.policy import _MODES, Mode, Notify, NotifyTarget, Policy

__all__ = [
    "API_VERSION",
    "PolicyError",
    "field_error",
    "parse_notify",
    "parse_tier",
    "read_policy_file",
    "read_tier",
    "read_yaml",
]

API_VERSION = "duragent/v1alpha1"


class PolicyError(ConfigError):
    """A policy file is malformed; the message names file, line, field, value and the fix."""


def read_yaml(path: Path) -> tuple[str, LocatedYaml]:
    """The file's text and parsed YAML; unreadable files and syntax errors raise PolicyError."""
    try:
        text = read_text(path)
        return text, load_yaml_text(text, file=path)
    except ConfigError as exc:
        error = PolicyError(exc.reason, file=exc.file, line=exc.line, fix=exc.fix)
        raise error from None


def read_tier(path: Path) -> tuple[Mode | None, list[str], list[str], Notify]:
    """One tier read and checked as a turn uses it (PolicyError when it cannot be used)."""
    doc = read_yaml(path)[1]
    mode, deny, allow = parse_tier(doc)
    return mode, deny, allow, parse_notify(doc)


_KNOWN_FIELDS: dict[tuple[str, ...], tuple[str, ...]] = {
    (): ("apiVersion", "kind", "mode", "deny", "allow", "notify"),
    ("notify",): ("enabled", "patterns", "deliveries"),
}


def read_policy_file(path: Path) -> tuple[Policy, list[ConfigError]]:
    """One tier on its own (``doctor``): its policy, and its warnings.

    A warning for each unknown field, and for each field not acted on (``config.fields``).

    Unknown fields are not errors at run time (the reference ignores them, and a policy
    error stops every turn of the agent); ``doctor`` names them so a typo is not silent.

    Raises:
        PolicyError: the file is malformed, as ``load_policy`` would say.
    """
    doc = read_yaml(path)[1]
    mode, deny, allow = parse_tier(doc)
    notify = parse_notify(doc)
    policy = Policy(mode=mode or "dangerous", allow=tuple(allow), deny=tuple(deny), notify=notify)
    warnings: list[ConfigError] = []
    data = doc.data if isinstance(doc.data, dict) else {}
    for at, known in _KNOWN_FIELDS.items():
        section = data.get(at[0]) if at else data
        if not isinstance(section, dict):
            continue
        for key in section:
            if key not in known:
                reason = "unknown field (ignored)"
                warnings.append(
                    field_error(doc, [*at, str(key)], reason, None, allowed=", ".join(known))
                )
    return policy, warnings + unsupported_warnings("policy", doc)


_DELIVERY_FIX = "write each delivery as '- type: log' or '- type: webhook' with 'url: https://…'"


def parse_notify(doc: LocatedYaml) -> Notify:
    """The tier's ``notify:`` (``parse_tier`` has checked it is a mapping or absent)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    notify = data.get("notify")
    if notify is None:
        return Notify()
    enabled = notify.get("enabled", False)
    if not isinstance(enabled, bool):
        raise field_error(doc, ["notify", "enabled"], "must be true or false", enabled)
    patterns = _patterns(doc, notify, "patterns", at=["notify"])
    raw = notify.get("deliveries")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise field_error(doc, ["notify", "deliveries"], "must be a list", raw, fix=_DELIVERY_FIX)
    deliveries = []
    for i, item in enumerate(raw):
        at: list[str | int] = ["notify", "deliveries", i]
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "log":
            deliveries.append(NotifyTarget("log"))
        elif kind == "webhook":
            url = item.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise field_error(
                    doc, [*at, "url"], "must be an http:// or https:// URL", url, fix=_DELIVERY_FIX
                )
            deliveries.append(NotifyTarget("webhook", url))
        else:
            shown = kind if isinstance(item, dict) else item
            raise field_error(doc, [*at, "type"], "invalid value", shown, allowed="log, webhook")
    return Notify(enabled, tuple(patterns), tuple(deliveries))


def field_error(
    doc: LocatedYaml, key: list[str | int], reason: str, value: object, **extra: str
) -> PolicyError:
    """The error for the field at ``key`` (``["notify", "deliveries", 0]``), with its line."""
    field = "".join(
        f"[{k}]" if isinstance(k, int) else f".{k}" if i else k for i, k in enumerate(key)
    )
    line = doc.line_of(key)
    return PolicyError(reason, file=doc.file, line=line, field=field or None, value=value, **extra)


def parse_tier(doc: LocatedYaml) -> tuple[Mode | None, list[str], list[str]]:
    """The tier's mode (None: not set), deny and allow patterns; checks ``notify`` is a mapping."""
    data = {} if doc.data is None else doc.data
    if not isinstance(data, dict):
        start = "start from 'apiVersion: duragent/v1alpha1', 'kind: Policy', 'allow: []'"
        raise field_error(
            doc, [], "a policy file must be a YAML mapping", type(data).__name__, fix=start
        )
    for key, expected in (("apiVersion", API_VERSION), ("kind", "Policy")):
        if key in data and data[key] != expected:
            raise field_error(doc, [key], "invalid value", data[key], allowed=expected)
    mode = data.get("mode")
    if mode is not None and mode not in _MODES:
        raise field_error(
            doc,
            ["mode"],
            "invalid value",
            mode,
            allowed=", ".join(_MODES),
            fix="ask (approve what is not allowed) or restrict (refuse it); dangerous runs "
            "everything not denied",
        )
    if data.get("notify") is not None and not isinstance(data["notify"], dict):
        raise field_error(doc, ["notify"], "must be a mapping of keys to values", data["notify"])
    return mode, _patterns(doc, data, "deny"), _patterns(doc, data, "allow")


def _patterns(
    doc: LocatedYaml, data: dict[str, Any], key: str, *, at: list[str | int] | None = None
) -> list[str]:
    """The list of patterns under ``key`` (absent: none); each must be a non-empty string."""
    value = data.get(key)
    if value is None:
        return []
    where: list[str | int] = [*(at or []), key]
    fix = f"write one quoted pattern per line under '{key}:', e.g.  - \"bash:ls *\""
    if not isinstance(value, list):
        shown = type(value).__name__ if isinstance(value, dict) else value
        raise field_error(doc, where, "must be a list of patterns", shown, fix=fix)
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            reason = "a pattern must be a non-empty string"
            raise field_error(doc, [*where, index], reason, item, fix=fix)
    return list(value)
