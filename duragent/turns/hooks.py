"""Tool hooks (``spec.hooks``): guards before a call runs, steering after it succeeded.

The reference's semantics (giosakti/duragent ``src/tools/hooks.rs``), re-implemented:

- A hook's ``match`` is a pattern on the call's *invocation*, ``<tool>`` or ``<tool>:<action>``
  (``action`` is the call's string argument of that name, if any); ``*`` matches any run of
  characters (``background_process:*``, ``*``). Without ``*`` the pattern must equal it.
- ``before_tool`` guards, first rejection wins; a rejected call never runs and its result is
  the guard's message (the model reads it):
  ``depends_on`` — an earlier assistant call matching ``prior`` must exist, with the same
  ``match_arg`` value when one is named; ``skip_duplicate`` — refused when an earlier call of
  the same invocation with equal ``match_args`` values already has a result the model still
  sees (not masked by the context fitter).
- ``after_tool`` steering, only when the call succeeded: every matching hook whose ``unless``
  has no key/value equal to the call's arguments contributes its message; they are joined by
  newlines and shown to the model as a user message ``[steering] <text>``.
- Built-in defaults come with some builtin tools (``default_hooks``); an agent's hook with
  the same ``match`` replaces the default one.

Values are compared as JSON values, as the reference's ``serde_json::Value`` does: ``true``
is not ``1`` and ``1`` is not ``1.0``. A hook that raises is logged and skipped: a broken hook
never breaks the turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from duragent.agents.spec import AfterToolHook, AgentSpec, BeforeToolHook, HooksSpec
from duragent.core.messages import Message, Role, ToolCall

__all__ = [
    "after_tool",
    "before_tool",
    "default_hooks",
    "effective_hooks",
    "invocation",
    "json_equal",
    "matches",
]

log = logging.getLogger(__name__)

MASKED_PREFIX = "[result masked"
"""How a tool result the context fitter masked begins (``context.render.masked_notice``)."""


def default_hooks(builtin_names: Sequence[str]) -> HooksSpec:
    """The hooks that come with the builtin tools an agent lists (the reference's texts)."""
    before: list[BeforeToolHook] = []
    after: list[AfterToolHook] = []
    for name in builtin_names:
        if name == "memory":
            before.append(
                BeforeToolHook(match="memory:recall", type="skip_duplicate", match_args=["days"])
            )
        elif name == "background_process":
            before.append(
                BeforeToolHook(
                    match="background_process:send_keys",
                    type="depends_on",
                    prior="background_process:capture",
                    match_arg="handle",
                )
            )
            after.append(
                AfterToolHook(
                    match="background_process:capture",
                    message="You now have the current screen state. Base your next action on "
                    "what you see above.",
                )
            )
            after.append(
                AfterToolHook(
                    match="background_process:spawn",
                    message="Remember to start a watcher for this process if you need to "
                    "monitor it.",
                    unless={"wait": True},
                )
            )
    return HooksSpec(before_tool=before, after_tool=after)


def effective_hooks(spec: AgentSpec) -> HooksSpec:
    """The agent's hooks, then the defaults of its builtin tools that it did not override."""
    names = [t.name for t in spec.tools if t.type == "builtin"]
    defaults = default_hooks(names)
    own_before = {h.match for h in spec.hooks.before_tool}
    own_after = {h.match for h in spec.hooks.after_tool}
    return HooksSpec(
        before_tool=[
            *spec.hooks.before_tool,
            *(h for h in defaults.before_tool if h.match not in own_before),
        ],
        after_tool=[
            *spec.hooks.after_tool,
            *(h for h in defaults.after_tool if h.match not in own_after),
        ],
    )


def invocation(name: str, args: Mapping[str, Any] | None) -> str:
    """``<tool>:<action>`` when the arguments carry a string ``action``, else ``<tool>``."""
    action = args.get("action") if args is not None else None
    return f"{name}:{action}" if isinstance(action, str) else name


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def matches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (``*`` = any characters, nothing else special) matches all of it."""
    if "*" not in pattern:
        return pattern == text
    return _glob(pattern).fullmatch(text) is not None


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: types must agree (``true`` ≠ ``1``, ``1`` ≠ ``1.0``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}


_ABSENT = object()


def _depends_on(
    hook: BeforeToolHook, args: Mapping[str, Any], seen: Sequence[Message]
) -> str | None:
    if hook.prior is None:
        return None
    wanted = args.get(hook.match_arg, _ABSENT) if hook.match_arg else _ABSENT
    for message in reversed(seen):
        if message.role is not Role.ASSISTANT:
            continue
        for call in message.tool_calls:
            prior_args = _arguments(call)
            if not matches(hook.prior, invocation(call.name, prior_args)):
                continue
            if hook.match_arg:
                found = prior_args.get(hook.match_arg, _ABSENT)
                if (found is _ABSENT) != (wanted is _ABSENT):
                    continue
                if found is not _ABSENT and not json_equal(found, wanted):
                    continue
            return None
    tail = f" The '{hook.match_arg}' argument must match." if hook.match_arg else ""
    return f"Hook guard: this tool requires a prior '{hook.prior}' call first.{tail}"


def _identity(args: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {k: args[k] for k in keys if k in args}


def _skip_duplicate(
    hook: BeforeToolHook, name: str, args: Mapping[str, Any], seen: Sequence[Message]
) -> str | None:
    if not hook.match_args:
        return None
    current = invocation(name, args)
    identity = _identity(args, hook.match_args)
    for index, message in enumerate(seen):
        if message.role is not Role.ASSISTANT:
            continue
        for call in message.tool_calls:
            prior_args = _arguments(call)
            if not matches(current, invocation(call.name, prior_args)):
                continue
            if not json_equal(_identity(prior_args, hook.match_args), identity):
                continue
            result = next(
                (m for m in seen[index + 1 :] if m.role is Role.TOOL and m.tool_call_id == call.id),
                None,
            )
            if result is not None and not result.text.startswith(MASKED_PREFIX):
                return (
                    f"Hook guard: duplicate call skipped. An identical '{current}' call with the "
                    "same arguments already has a result in this conversation."
                )
    return None


def before_tool(
    hooks: HooksSpec, name: str, args: Mapping[str, Any], seen: Sequence[Message]
) -> str | None:
    """Why the call must not run (the result the model reads), or None to let it run.

    ``seen``: the conversation as the model last saw it plus what this turn added since,
    including the response that made this call.
    """
    current = invocation(name, args)
    for hook in hooks.before_tool:
        if not matches(hook.match, current):
            continue
        try:
            if hook.type == "depends_on":
                reason = _depends_on(hook, args, seen)
            else:
                reason = _skip_duplicate(hook, name, args, seen)
        except Exception:
            log.exception("before_tool hook %r failed; it is skipped", hook.match)
            continue
        if reason is not None:
            return reason
    return None


def after_tool(hooks: HooksSpec, call: ToolCall, success: bool) -> str | None:
    """The steering text after ``call`` (matching hooks' messages, one a line), or None."""
    if not success or not hooks.after_tool:
        return None
    args = _arguments(call)
    current = invocation(call.name, args)
    found: list[str] = []
    for hook in hooks.after_tool:
        if not matches(hook.match, current):
            continue
        try:
            suppressed = any(
                key in args and json_equal(args[key], value) for key, value in hook.unless.items()
            )
        except Exception:
            log.exception("after_tool hook %r failed; it is skipped", hook.match)
            continue
        if not suppressed:
            found.append(hook.message)
    return "\n".join(found) if found else None
