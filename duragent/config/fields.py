"""Every field a person can write, and what happens to it: no field is silently ignored.

A user who configures a hook, a sandbox or a notification believes it is in force, so each
field of the three file formats (``agent.yaml``, ``duragent.yaml``, policy files) is listed
here exactly once, as one of:

- ``Use(module, function)``: acted on; ``function`` (a function or method in ``module``)
  reads it. ``tests/config/test_fields.py`` walks the formats' JSON Schemas and fails when a
  field is missing here, when a listed field no longer exists, or when the named function
  does not mention the field: so the next field added to a model cannot slip in unnoticed.
- ``Checked(why)``: validated and with no further effect, on purpose (``apiVersion``).
- ``Warn(fix)``: accepted but not acted on; ``serve`` and ``doctor`` report it (file, line,
  field, what to do) whenever a file sets it (``unsupported_warnings``), or only for the
  values ``when`` picks.

Fields being implemented elsewhere are in ``PLANNED`` (one place to flip at merge): they warn
until their module lands; the test then fails and says which line to move to ``FIELDS``.

Paths are dotted as in the file; ``[]`` stands for every item of a list
(``spec.tools[].name``). A field holding a free-form mapping (``metadata.labels``) is one
field. Sections are not listed, only the fields in them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from duragent.config.yamlio import LocatedYaml
from duragent.errors import ConfigError

__all__ = [
    "FIELDS",
    "PLANNED",
    "Checked",
    "Format",
    "Planned",
    "Use",
    "Warn",
    "registry",
    "unsupported_warnings",
]

Format = Literal["agent", "workspace", "policy"]


@dataclass(frozen=True, slots=True)
class Use:
    """The field is read by ``function`` (``name`` or ``Class.method``) in ``module``."""

    module: str
    function: str


@dataclass(frozen=True, slots=True)
class Checked:
    """The field is validated and has no other effect, on purpose."""

    why: str


@dataclass(frozen=True, slots=True)
class Warn:
    """The field is accepted but not acted on: a warning says so and what to do.

    ``when``: only these values are not acted on (e.g. every ``sandbox.mode`` but ``trust``);
    ``also``: where the values that *are* acted on are read.
    """

    fix: str
    when: Callable[[Any], bool] | None = None
    also: Use | Checked | None = None


@dataclass(frozen=True, slots=True)
class Planned:
    """Being implemented by another line of work (issue 19): warns until it lands.

    ``lands``: the module whose arrival means the work is merged; ``then``: the ``FIELDS``
    entry the field gets then.
    """

    area: str
    lands: str
    warn: Warn
    then: Use | Checked


Fate = Use | Checked | Warn

_SPEC = "duragent.agents.loader"
_ACCESS = "duragent.frontkit.access"
_ROLES = "duragent.agents.roles"
_QUOTAS = "duragent.scheduler.quotas"
_QUEUE = "duragent.turns.ordering"
_HOOKS = "duragent.turns.hooks"
_SCHEDULES = "duragent.scheduler.model"
_TELEGRAM = "duragent.gateways.telegram.service"
_HTTP = "duragent.gateways.http.server.uvicorn_server"
_ROUTES = "duragent.frontkit.routing"
_SANDBOX = "duragent.tools.sandbox"
_DISCORD = "duragent.gateways.discord.service"
_EXT = "duragent.gateways.external"
_MEDIA = "duragent.runtime.media"
_BUDGET = "duragent.turns.agent_budget"

FIELDS: dict[Format, dict[str, Fate]] = {
    "agent": {
        "apiVersion": Checked("must be duragent/v1alpha1 (the format's version)"),
        "kind": Checked("must be Agent"),
        "metadata.name": Use(_SPEC, "check_agent"),
        "metadata.description": Use("duragent.gateways.http.app", "agent_detail"),
        "metadata.version": Use("duragent.gateways.http.app", "agent_detail"),
        "metadata.labels": Use("duragent.gateways.http.app", "agent_detail"),
        "spec.model.provider": Use("duragent.turns.providers", "_build"),
        "spec.model.name": Use("duragent.turns.providers", "for_agent"),
        "spec.model.base_url": Use("duragent.llm.factory", "build_provider"),
        "spec.model.temperature": Use("duragent.turns.context", "build"),
        "spec.model.max_input_tokens": Use("duragent.turns.agent_budget", "budget_settings"),
        "spec.model.max_output_tokens": Use("duragent.turns.agent_budget", "budget_settings"),
        "spec.model.pricing.input_per_million": Use("duragent.agents.spec", "cost"),
        "spec.model.pricing.output_per_million": Use("duragent.agents.spec", "cost"),
        "spec.model.vision": Use("duragent.llm.vision", "can_see"),
        "spec.model.attachment_turns": Use("duragent.turns.images", "Attachments.for_turn"),
        "spec.soul": Use(_SPEC, "check_agent"),
        "spec.system_prompt": Use(_SPEC, "check_agent"),
        "spec.instructions": Use(_SPEC, "check_agent"),
        "spec.skills_dir": Use(_SPEC, "check_agent"),
        "spec.allow_external_files": Use(_SPEC, "check_agent"),
        "spec.session.on_disconnect": Use("duragent.turns.between_turns", "_new_session"),
        "spec.session.compaction": Use("duragent.turns.between_turns", "_new_session"),
        "spec.session.ttl_hours": Use("duragent.runtime.server", "_ttl_hours"),
        "spec.session.max_tool_iterations": Use("duragent.turns.context", "build"),
        "spec.session.max_tool_calls_per_response": Use("duragent.turns.context", "build"),
        "spec.session.max_tool_calls_per_turn": Use("duragent.turns.context", "build"),
        "spec.session.max_reply_bytes": Use("duragent.turns.context", "build"),
        "spec.session.max_tool_argument_bytes": Use("duragent.turns.context", "build"),
        "spec.session.max_tool_argument_depth": Use("duragent.turns.context", "build"),
        "spec.session.llm_timeout_seconds": Use("duragent.turns.providers", "_build"),
        "spec.session.stream_replies": Use("duragent.frontkit.preview", "Previews.streams"),
        "spec.session.context.max_history_tokens": Use(_BUDGET, "budget_settings"),
        "spec.session.context.max_tool_result_tokens": Use(_BUDGET, "budget_settings"),
        "spec.session.context.tool_result_truncation": Use(_BUDGET, "budget_settings"),
        "spec.session.context.tool_result_keep_first": Use(_BUDGET, "budget_settings"),
        "spec.session.context.tool_result_keep_last": Use(_BUDGET, "budget_settings"),
        "spec.session.context.full_prompt": Use("duragent.turns.agent_budget", "budget_settings"),
        "spec.session.context.prune.enabled": Use("duragent.turns.agent_budget", "budget_settings"),
        "spec.session.context.prune.protect_tokens": Use(_BUDGET, "budget_settings"),
        "spec.session.context.prune.minimum_tokens": Use(_BUDGET, "budget_settings"),
        "spec.session.context.prune.protected_tools": Use(_BUDGET, "budget_settings"),
        "spec.session.context.saved_outputs.enabled": Use(
            "duragent.turns.context", "_saved_outputs"
        ),
        "spec.session.context.saved_outputs.max_output_bytes": Use(
            "duragent.turns.context", "_saved_outputs"
        ),
        "spec.session.context.saved_outputs.max_session_bytes": Use(
            "duragent.turns.context", "_saved_outputs"
        ),
        "spec.session.context.saved_outputs.retention_days": Use(
            "duragent.turns.context", "_saved_outputs"
        ),
        **{
            f"spec.session.context.summaries.{name}": Use(
                "duragent.turns.summaries", "agent_summary_settings"
            )
            for name in (
                "enabled",
                "model",
                "threshold",
                "keep_recent",
                "max_summary_tokens",
                "pinned_share",
                "pin_task",
            )
        },
        "spec.tools[].type": Checked("selects the kind of tool entry (builtin or cli)"),
        "spec.tools[].name": Use("duragent.tools.registry", "build_tools"),
        "spec.tools[].allow_private": Use("duragent.tools.registry", "_web_tool"),
        "spec.tools[].max_body_bytes": Use("duragent.tools.registry", "_web_tool"),
        "spec.tools[].command": Use("duragent.tools.registry", "build_tools"),
        "spec.tools[].readme": Use("duragent.tools.registry", "_read_readme"),
        "spec.tools[].description": Use("duragent.tools.registry", "build_tools"),
        "spec.access.owners": Use("duragent.agents.access_spec", "AccessSpec.owner_ids"),
        "spec.access.tool_scope": Use(_ROLES, "caller_for"),
        "spec.access.quotas.schedules_per_chat": Use(_QUOTAS, "schedule_refusal"),
        "spec.access.quotas.min_schedule_interval_seconds": Use(_QUOTAS, "schedule_refusal"),
        "spec.access.quotas.messages_per_sender_per_minute": Use(
            "duragent.frontkit.rates", "SenderRates.admit"
        ),
        "spec.access.quotas.tokens_per_chat_per_day": Use(
            "duragent.turns.token_quota", "TokenQuota.check"
        ),
        "spec.access.quotas.background_processes_per_chat": Use(
            "duragent.tools.processes.tool", "BackgroundProcessTool._over_quota"
        ),
        "spec.access.dm.policy": Use(_ROLES, "chat_allowed"),
        "spec.access.dm.allowlist": Use(_ROLES, "chat_allowed"),
        "spec.access.groups.policy": Use(_ROLES, "chat_allowed"),
        "spec.access.groups.allowlist": Use(_ROLES, "chat_allowed"),
        "spec.access.groups.activation": Use(_ACCESS, "admit"),
        "spec.access.groups.sender_default": Use(_ROLES, "sender_disposition"),
        "spec.access.groups.sender_overrides": Use(_ROLES, "sender_disposition"),
        "spec.access.groups.context_buffer.mode": Use(_ACCESS, "mention_context"),
        "spec.access.groups.context_buffer.max_messages": Use(
            "duragent.frontkit.group_context", "read_group_context"
        ),
        "spec.access.groups.context_buffer.max_age_hours": Use(
            "duragent.frontkit.group_context", "read_group_context"
        ),
        "spec.access.groups.queue.mode": Use(_QUEUE, "_offer"),
        "spec.access.groups.queue.max_pending": Use(_QUEUE, "_admit"),
        "spec.access.groups.queue.overflow": Use(_QUEUE, "_admit"),
        "spec.access.groups.queue.reject_message": Use(_QUEUE, "_admit"),
        "spec.access.groups.queue.debounce.enabled": Use(_QUEUE, "_offer"),
        "spec.access.groups.queue.debounce.window_ms": Use(_QUEUE, "_offer"),
        "spec.access.groups.queue.approval_wait_seconds": Use(
            "duragent.turns.approval_wait", "wait_for_requester"
        ),
        "spec.chat.start_message": Use("duragent.frontkit.commands", "start_text"),
        "spec.chat.help_message": Use("duragent.frontkit.commands", "help_text"),
        "spec.chat.commands[].command": Use("duragent.frontkit.commands", "commands_for"),
        "spec.chat.commands[].description": Use("duragent.frontkit.commands", "commands_for"),
        "spec.memory.backend": Checked(
            "filesystem is the only backend; the section enables memory"
        ),
        "spec.hooks.before_tool[].match": Use(_HOOKS, "before_tool"),
        "spec.hooks.before_tool[].type": Use(_HOOKS, "before_tool"),
        "spec.hooks.before_tool[].prior": Use(_HOOKS, "_depends_on"),
        "spec.hooks.before_tool[].match_arg": Use(_HOOKS, "_depends_on"),
        "spec.hooks.before_tool[].match_args": Use(_HOOKS, "_skip_duplicate"),
        "spec.hooks.after_tool[].match": Use(_HOOKS, "after_tool"),
        "spec.hooks.after_tool[].message": Use(_HOOKS, "after_tool"),
        "spec.hooks.after_tool[].unless": Use(_HOOKS, "after_tool"),
        "spec.schedules[].name": Use("duragent.scheduler.loading", "read_declared"),
        "spec.schedules[].schedule": Use(_SCHEDULES, "parse_schedule"),
        "spec.schedules[].payload": Use(_SCHEDULES, "parse_schedule"),
        "spec.schedules[].destination": Use(_SCHEDULES, "parse_schedule"),
        "spec.schedules[].retry": Use(_SCHEDULES, "parse_schedule"),
    },
    "workspace": {
        "workspace": Use("duragent.config.workspace", "workspace_paths"),
        "agents_dir": Use("duragent.config.workspace", "workspace_paths"),
        "services.session.path": Use("duragent.config.workspace", "workspace_paths"),
        "world_memory.path": Use("duragent.config.workspace", "workspace_paths"),
        "server.host": Use("duragent.runtime.server", "Runtime.__init__"),
        "server.port": Use("duragent.runtime.server", "Runtime.__init__"),
        "server.request_timeout_seconds": Use("duragent.runtime.fronts", "_chat_platform"),
        "server.idle_timeout_seconds": Use("duragent.runtime.server", "Runtime.__init__"),
        "server.keep_alive_interval_seconds": Use("duragent.gateways.http.api.sessions", "stream"),
        "server.max_connections": Use("duragent.runtime.startup", "descriptor_budget"),
        "server.admin_token": Use("duragent.gateways.http.app", "admin"),
        "server.api_token": Use("duragent.gateways.http.app", "api"),
        "server.pin_python_threads": Use("duragent.runtime.server", "_tune"),
        "server.metrics": Use("duragent.runtime.server", "Runtime.__init__"),
        "server.allowed_hosts": Use("duragent.gateways.http.server.browser", "request_problem"),
        "server.allowed_origins": Use("duragent.gateways.http.server.browser", "request_problem"),
        "server.header_timeout_seconds": Use(_HTTP, "HttpServer.__init__"),
        "server.body_timeout_seconds": Use(_HTTP, "HttpServer.__init__"),
        "server.connection_idle_timeout_seconds": Use(_HTTP, "HttpServer.__init__"),
        "sessions.ttl_hours": Use("duragent.runtime.server", "_ttl_hours"),
        "sessions.compaction": Use("duragent.runtime.server", "Runtime.__init__"),
        "sessions.max_live_actors": Use("duragent.runtime.server", "Runtime.__init__"),
        "sessions.idle_actor_seconds": Use("duragent.runtime.server", "Runtime.__init__"),
        "sessions.active_actors": Use("duragent.runtime.startup", "descriptor_budget"),
        "gateways.telegram.enabled": Use("duragent.runtime.fronts", "_chat_platform"),
        "gateways.telegram.bot_token": Use(_TELEGRAM, "_start"),
        "gateways.telegram.base_url": Use(_TELEGRAM, "_start"),
        "gateways.telegram.webhook_url": Use(_TELEGRAM, "_start"),
        "gateways.telegram.webhook_secret": Use(_TELEGRAM, "_set_webhook"),
        "gateways.telegram.poll_timeout_seconds": Use(_TELEGRAM, "_poll"),
        "gateways.telegram.max_messages_per_second": Use(_TELEGRAM, "_start"),
        "gateways.telegram.max_messages_per_minute_per_group": Use(_TELEGRAM, "_start"),
        "gateways.telegram.max_messages_per_second_per_chat": Use(_TELEGRAM, "_start"),
        "gateways.telegram.delivery_retry_seconds": Use(_TELEGRAM, "_start"),
        "gateways.discord.enabled": Use("duragent.runtime.fronts", "_chat_platform"),
        "gateways.discord.bot_token": Use(_DISCORD, "_start"),
        "gateways.discord.base_url": Use(_DISCORD, "_start"),
        "gateways.discord.delivery_retry_seconds": Use(_DISCORD, "_start"),
        "gateways.external[].name": Use(f"{_EXT}.assemble", "chats"),
        "gateways.external[].command": Use(f"{_EXT}.launch", "of"),
        "gateways.external[].args": Use(f"{_EXT}.launch", "of"),
        "gateways.external[].env": Use(f"{_EXT}.launch", "of"),
        "gateways.external[].restart": Use(f"{_EXT}.service", "start"),
        "gateways.external[].fans_out": Use(f"{_EXT}.assemble", "chats"),
        "gateways.external[].delivery_retry_seconds": Use(
            f"{_EXT}.service", "ExternalGateway.start"
        ),
        "gateways.external[].bot_username": Use(f"{_EXT}.assemble", "build_external_gateway"),
        "media.max_bytes.image": Use(_MEDIA, "media_settings"),
        "media.max_bytes.voice": Use(_MEDIA, "media_settings"),
        "media.max_bytes.audio": Use(_MEDIA, "media_settings"),
        "media.max_bytes.video": Use(_MEDIA, "media_settings"),
        "media.max_bytes.document": Use(_MEDIA, "media_settings"),
        "media.transcription.provider": Use(_MEDIA, "_transcriber"),
        "media.transcription.base_url": Use(_MEDIA, "_transcriber"),
        "media.transcription.model": Use(_MEDIA, "_transcriber"),
        "media.transcription.api_key_env": Use(_MEDIA, "_transcriber"),
        "media.transcription.language": Use(_MEDIA, "_transcriber"),
        "media.allow_private": Use("duragent.runtime.fronts", "Fronts.external"),
        "routes[].match.gateway": Use(_ROUTES, "_matches"),
        "routes[].match.chat_type": Use(_ROUTES, "_matches"),
        "routes[].match.chat_id": Use(_ROUTES, "_matches"),
        "routes[].match.sender_id": Use(_ROUTES, "_matches"),
        "routes[].agent": Use(_ROUTES, "route"),
        "scheduler.enabled": Use("duragent.runtime.fronts", "scheduler"),
        "scheduler.max_concurrent_runs": Use("duragent.runtime.fronts", "scheduler"),
        "scheduler.one_shot_grace_seconds": Use("duragent.runtime.fronts", "scheduler"),
        "scheduler.recurring_grace_seconds": Use("duragent.runtime.fronts", "scheduler"),
        "store.backend": Use("duragent.store.backends", "session_storage"),
        "store.dsn": Use("duragent.store.backends", "session_storage"),
        "store.schema": Use("duragent.store.postgres.connection", "Database.__init__"),
        "store.node_id": Use("duragent.store.backends", "session_storage"),
        "store.lease_seconds": Use("duragent.store.backends", "session_storage"),
        "store.pool_size": Use("duragent.store.backends", "session_storage"),
        "store.advertise_url": Use("duragent.runtime.server", "Runtime._start_http"),
        "sandbox.mode": Use(_SANDBOX, "for_workspace"),
        "sandbox.network": Use(_SANDBOX, "for_workspace"),
        "sandbox.env": Use(_SANDBOX, "for_workspace"),
    },
    "policy": {
        "apiVersion": Use("duragent.tools.policy_tier", "parse_tier"),
        "kind": Use("duragent.tools.policy_tier", "parse_tier"),
        "mode": Use("duragent.tools.policy_tier", "parse_tier"),
        "allow": Use("duragent.tools.policy_tier", "parse_tier"),
        "deny": Use("duragent.tools.policy_tier", "parse_tier"),
        "notify.enabled": Use("duragent.tools.notify", "after_call"),
        "notify.patterns": Use("duragent.tools.policy", "should_notify"),
        "notify.deliveries[].type": Use("duragent.tools.notify", "_one"),
        "notify.deliveries[].url": Use("duragent.tools.notify", "_one"),
    },
}

_NOT_YET = "this duragent does not act on it yet"
# --- PLANNED: one line per field another line of work is implementing (none today). -------
# When such a branch lands, its module exists and tests/config/test_fields.py fails naming
# the line: move it to FIELDS as its ``then``.
PLANNED: dict[Format, dict[str, Planned]] = {}


def registry(fmt: Format) -> dict[str, Fate]:
    """Every field of ``fmt`` and its fate today (a planned field warns)."""
    merged: dict[str, Fate] = dict(FIELDS[fmt])
    merged.update({path: planned.warn for path, planned in PLANNED.get(fmt, {}).items()})
    return merged


def _values(
    data: Any, parts: list[str], trail: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Each value at the path ``parts`` (``name[]`` = every item of list ``name``) in ``data``."""
    if not parts:
        yield trail, data
        return
    head, rest = parts[0], parts[1:]
    each = head.endswith("[]")
    key = head.removesuffix("[]")
    if not isinstance(data, dict) or key not in data:
        return
    value = data[key]
    if not each:
        yield from _values(value, rest, (*trail, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _values(item, rest, (*trail, key, i))


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path)
    )


def unsupported_warnings(fmt: Format, doc: LocatedYaml) -> list[ConfigError]:
    """A warning for each field ``doc`` sets that this duragent accepts but does not act on."""
    found: list[ConfigError] = []
    for path, fate in registry(fmt).items():
        if not isinstance(fate, Warn):
            continue
        for where, value in _values(doc.data, path.split("."), ()):
            if value is None or (fate.when is not None and not fate.when(value)):
                continue
            found.append(
                ConfigError(
                    "not supported (accepted, but has no effect)",
                    file=doc.file,
                    line=doc.line_of(where),
                    field=_dotted(where),
                    value=value if isinstance(value, str | int | float | bool) else None,
                    fix=fate.fix,
                )
            )
    return found
