"""The ``schedule`` tool: an agent creates, lists and cancels its own schedules from a chat.

The reference's arguments, checks and texts: ``create`` needs the chat the session belongs
to (its results go there: "No gateway context" otherwise), exactly one of ``at`` /
``every_seconds`` / ``cron`` and exactly one of ``message`` / ``task``; ``list`` shows the
agent's active schedules; ``cancel`` only the agent's own. ``list`` and ``cancel`` keep to
the schedules delivering to the caller's chat unless the caller reaches the whole agent
(``scheduler.model.reaches``): another chat's schedule is "not found". Two differences:
``cron`` takes the common 5 fields (the reference's tool text showed them but its parser
wanted 6–7), and ``tz`` gives the cron an IANA time zone (the reference ignored zones).
``create`` also
keeps to the agent's ``spec.access.quotas`` (``scheduler.quotas``): how many schedules a
chat may have and how often they may run, refused before anything is written.

Offered only to agents that list the ``schedule`` builtin, and never during a scheduled
task's own turn (no schedules creating schedules: ``Schedules.chat.task_sessions``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from duragent.agents.access_spec import QuotaSpec
from duragent.core.messages import ToolDefinition
from duragent.errors import ConfigError, DuragentError
from duragent.scheduler.bounds import TIME_RANGE, retry_problem
from duragent.scheduler.front import Schedules
from duragent.scheduler.model import (
    At,
    Cron,
    Destination,
    Every,
    MessagePayload,
    Payload,
    Retry,
    TaskPayload,
    Timing,
    format_time,
    parse_time,
)
from duragent.scheduler.quotas import schedule_refusal
from duragent.scheduler.timing import check_timing, describe_timing
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome

__all__ = ["ScheduleTool"]

ChatOf = Callable[[str], Awaitable[Destination | None]]
"""The chat a session belongs to (None: not a chat session)."""

_TIMINGS = ("at", "every_seconds", "cron")
_PAYLOADS = ("message", "task")
_RETRY = ("max_retries", "initial_delay_ms", "max_delay_ms")


class ScheduleTool:
    """``schedule`` (see module docstring)."""

    name = "schedule"
    policy_type: PolicyType = "builtin"

    def __init__(
        self, schedules: Schedules, chat_of: ChatOf, quotas: QuotaSpec | None = None
    ) -> None:
        self._schedules = schedules
        self._chat_of = chat_of
        self._quotas = quotas or QuotaSpec()
        """The agent's ``spec.access.quotas`` (``scheduler.quotas``); defaults when absent."""

    def definition(self) -> ToolDefinition:
        """``action`` create/list/cancel and the create arguments."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Schedule a message or a task for this chat. action=create with exactly one "
                "of at (RFC 3339 time in the future), every_seconds, or cron (5 fields, e.g. "
                "'0 9 * * MON-FRI', with tz such as 'Europe/Berlin'), and exactly one of "
                "message (sent as is) or task (you run it and send the result). "
                "action=list shows your active schedules; action=cancel stops schedule_id."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "list", "cancel"]},
                    "at": {"type": "string", "description": "One-shot time (RFC 3339)."},
                    "every_seconds": {"type": "integer", "minimum": 1},
                    "cron": {"type": "string", "description": "minute hour day month weekday"},
                    "tz": {"type": "string", "description": "IANA time zone of cron."},
                    "message": {"type": "string"},
                    "task": {"type": "string"},
                    "schedule_id": {"type": "string"},
                    "max_retries": {"type": "integer", "minimum": 0},
                    "initial_delay_ms": {"type": "integer", "minimum": 0},
                    "max_delay_ms": {"type": "integer", "minimum": 0},
                    "process_handle": {
                        "type": "string",
                        "description": (
                            "(create) Link to a background process handle. The schedule is "
                            "auto-cancelled when the process exits."
                        ),
                    },
                },
                "required": ["action"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``schedule:<action>``."""
        action = args.get("action")
        return f"{self.name}:{action}" if isinstance(action, str) else self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Do the action; mistakes are unsuccessful outcomes with the reference's texts."""
        action = args.get("action")
        try:
            if action == "create":
                return await self._create(args, ctx)
            if action == "list":
                return self._list(ctx)
            if action == "cancel":
                sched_id = args.get("schedule_id")
                if not isinstance(sched_id, str) or not sched_id:
                    return _error("schedule_id is required for cancel")
                await self._schedules.cancel_async(
                    sched_id, agent=ctx.agent_name, caller=ctx.caller
                )
                return ToolOutcome(True, f"Cancelled schedule: {sched_id}")
        except DuragentError as exc:
            return _error(str(exc))
        return _error("action must be one of create, list, cancel")

    async def _create(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        chat = await self._chat_of(ctx.session_id)
        if chat is None:
            return _error("No gateway context: schedules deliver to the chat they are made in")
        given = [k for k in _TIMINGS if args.get(k) not in (None, "")]
        if not given:
            return _error("Must specify one of at, every_seconds, or cron")
        if len(given) > 1:
            return _error("Can only specify one of at, every_seconds, or cron")
        payloads = [k for k in _PAYLOADS if args.get(k) not in (None, "")]
        if not payloads:
            return _error("Must specify one of message or task")
        if len(payloads) > 1:
            return _error("Can only specify one of message or task")
        timing = _timing(given[0], args, self._schedules.clock.now())
        if isinstance(timing, str):
            return _error(timing)
        text = str(args[payloads[0]])
        payload: Payload = MessagePayload(text) if payloads[0] == "message" else TaskPayload(text)
        retry = None
        if any(args.get(k) is not None for k in _RETRY):
            try:
                given_retry = {k: int(args[k]) for k in _RETRY if args.get(k) is not None}
            except (TypeError, ValueError):
                return _error("max_retries, initial_delay_ms and max_delay_ms must be integers")
            retry = Retry(**given_retry)
            problem = retry_problem({k: getattr(retry, k) for k in _RETRY})
            if problem is not None:
                return _error(
                    f"{problem.field} {problem.reason} ({problem.allowed}; got "
                    f"{getattr(retry, problem.field)}): {problem.fix}"
                )
        async with self._schedules.creating():  # checked and written in one turn
            mine = self._schedules.listing(agent=ctx.agent_name, active_only=True)
            refusal = schedule_refusal(timing, chat, mine, self._quotas)
            if refusal is not None:
                return _error(refusal)
            schedule = await self._schedules.add_async(
                self._schedules.new(
                    agent=ctx.agent_name,
                    timing=timing,
                    payload=payload,
                    destination=chat,
                    created_by_session=ctx.session_id,
                    retry=retry,
                    process_handle=_process_handle(args),
                )
            )
        kind = "recurring" if schedule.recurring else "one-shot"
        return ToolOutcome(True, f"Created {kind} schedule: {schedule.id}")

    def _list(self, ctx: ToolContext) -> ToolOutcome:
        active = self._schedules.listing(agent=ctx.agent_name, active_only=True, caller=ctx.caller)
        if not active:
            return ToolOutcome(True, "No active schedules.")
        rows = [
            {
                "id": s.id,
                "timing": describe_timing(s.timing),
                "payload_type": "message" if isinstance(s.payload, MessagePayload) else "task",
                "created_at": format_time(s.created_at),
            }
            | ({"process_handle": s.process_handle} if s.process_handle else {})
            for s in active
        ]
        return ToolOutcome(True, "Active schedules:\n" + json.dumps(rows, indent=2))


def _timing(kind: str, args: Mapping[str, Any], now: Any) -> Timing | str:
    """The timing asked for, or the error text (a field out of range names its range)."""
    timing: Timing
    if kind == "at":
        try:
            timing = At(parse_time(args["at"]))
        except ValueError as exc:
            return (
                f"at must be an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00Z, "
                f"{TIME_RANGE} (got {args['at']!r}: {exc})"
            )
    elif kind == "every_seconds":
        seconds = args["every_seconds"]
        if type(seconds) is not int or seconds < 1:
            return "every_seconds must be >= 1"
        timing = Every(seconds, now)
    else:
        tz = args.get("tz")
        timing = Cron(str(args["cron"]), tz if isinstance(tz, str) and tz else None)
    problem = check_timing(timing)
    if problem is not None:
        value = getattr(timing, problem.field)
        return str(
            ConfigError(
                problem.reason,
                field=problem.field,
                value=value.isoformat() if isinstance(value, datetime) else value,
                allowed=problem.allowed,
                fix=problem.fix,
            )
        )
    return timing


def _process_handle(args: Mapping[str, Any]) -> str | None:
    value = args.get("process_handle")
    return value.strip() if isinstance(value, str) and value.strip() else None


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(False, text if text.startswith("Error: ") else f"Error: {text}")
