"""A schedule as the reference writes it, read and written field by field.

The file format is the reference's (``.duragent/schedules/<id>.yaml``): ``schedule`` and
``payload`` are externally tagged (``cron: {expr, tz}``, ``task: {task}``), times are RFC 3339.
Parsing is by hand rather than through a model library so each mistake is one
``ConfigError`` naming the file, the dotted field and the fix: a person may write these
files (or an agent's ``spec.schedules[]``), and an unparsable one is reported and skipped,
never deleted. Cron expressions and time zones are checked here too (``timing.check``), so a
schedule that loads can always be timed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from duragent.core.caller import Caller, ChatRef
from duragent.core.clock import utc_now
from duragent.errors import ConfigError
from duragent.scheduler.bounds import (
    TIME_RANGE,
    TimingProblem,
    every_problem,
    in_range,
    retry_problem,
)

__all__ = [
    "At",
    "Cron",
    "Destination",
    "Every",
    "MessagePayload",
    "Payload",
    "Retry",
    "Schedule",
    "ScheduleStatus",
    "TaskPayload",
    "Timing",
    "format_time",
    "parse_schedule",
    "parse_time",
    "reaches",
    "schedule_document",
]

ScheduleStatus = Literal["active", "completed", "cancelled"]
STATUSES: tuple[ScheduleStatus, ...] = ("active", "completed", "cancelled")


@dataclass(frozen=True, slots=True)
class At:
    """A one-shot at ``at`` (aware, UTC)."""

    at: datetime


@dataclass(frozen=True, slots=True)
class Every:
    """Every ``every_seconds`` seconds, counted from ``anchor`` (the creation time if None)."""

    every_seconds: int
    anchor: datetime | None = None


@dataclass(frozen=True, slots=True)
class Cron:
    """A cron expression (5 fields, or 6–7 with seconds) in IANA zone ``tz`` (UTC if None)."""

    expr: str
    tz: str | None = None


Timing = At | Every | Cron


@dataclass(frozen=True, slots=True)
class MessagePayload:
    """A fixed text delivered to the chat (no model call)."""

    message: str


@dataclass(frozen=True, slots=True)
class TaskPayload:
    """An instruction the agent runs as a full turn."""

    task: str


Payload = MessagePayload | TaskPayload


@dataclass(frozen=True, slots=True)
class Destination:
    """The chat a schedule's results go to."""

    gateway: str
    chat_id: str


@dataclass(frozen=True, slots=True)
class Retry:
    """Attempts after a failed one, with capped, jittered exponential backoff."""

    max_retries: int = 3
    initial_delay_ms: int = 1000
    max_delay_ms: int = 30000


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """One schedule. ``declared_in`` is set for schedules an agent's YAML declares."""

    id: str
    agent: str
    timing: Timing
    payload: Payload
    created_at: datetime
    status: ScheduleStatus = "active"
    destination: Destination | None = None
    created_by_session: str | None = None
    retry: Retry | None = None
    process_handle: str | None = None
    declared_in: Path | None = field(default=None, compare=False)

    @property
    def recurring(self) -> bool:
        """Whether it fires more than once."""
        return not isinstance(self.timing, At)

    def with_status(self, status: ScheduleStatus) -> Schedule:
        """The same schedule with another status."""
        return replace(self, status=status)


def reaches(caller: Caller, schedule: Schedule) -> bool:
    """Whether ``caller`` may see and change ``schedule``: it delivers to a chat they reach.

    A schedule belongs to the chat its results go to (``destination``); one with none (made
    over HTTP or the CLI) is nobody's chat: only a caller reaching the whole agent sees it.
    A declared schedule (``spec.schedules[]``) is the operator's: a chat sees it only when it
    delivers there, and nobody cancels it through the scheduler (``Schedules.cancel``).
    """
    dest = schedule.destination
    return caller.may_reach(ChatRef(dest.gateway, dest.chat_id) if dest is not None else None)


# --- times ----------------------------------------------------------------------------------


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with milliseconds (``2026-11-24T09:00:00.000Z``)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(text: object) -> datetime:
    """An RFC 3339 timestamp with an offset; ValueError otherwise."""
    if isinstance(text, datetime):  # YAML reads unquoted timestamps itself
        value = text
    elif isinstance(text, str):
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    else:
        raise ValueError("not a timestamp")
    if value.tzinfo is None:
        raise ValueError("has no time zone offset")
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+05:00 is before year 1 in UTC
        raise ValueError(_UNREPRESENTABLE) from None


_UNREPRESENTABLE = "is outside the years Python can represent"


# --- reading --------------------------------------------------------------------------------


class _Reader:
    """Reads one document, raising ``ConfigError`` with the file and the dotted field."""

    def __init__(self, file: Path | None, prefix: str) -> None:
        self.file = file
        self.prefix = prefix

    def fail(self, name: str, reason: str, value: object = None, fix: str | None = None) -> None:
        raise ConfigError(
            reason, file=self.file, field=f"{self.prefix}{name}", value=value, fix=fix
        )

    def mapping(self, data: object, name: str) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            self.fail(name, "must be a mapping", type(data).__name__)
        assert isinstance(data, Mapping)
        return data

    def text(self, data: Mapping[str, Any], key: str, name: str, *, required: bool = True) -> str:
        value = data.get(key)
        if value is None and not required:
            return ""
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)  # chat ids are often written as numbers
        if not isinstance(value, str) or not value.strip():
            self.fail(name, "must be a non-empty string", value)
        assert isinstance(value, str)
        return value

    def time(self, value: object, name: str) -> datetime:
        fix = "write it like 2026-12-01T09:00:00Z or 2026-12-01T09:00:00+01:00"
        try:
            parsed = parse_time(value)
        except ValueError as exc:
            if str(exc) != _UNREPRESENTABLE:
                self.fail(name, f"is not an RFC 3339 timestamp ({exc})", value, fix=fix)
            parsed = None
        if parsed is None or not in_range(parsed):
            raise ConfigError(
                "is out of range", file=self.file, field=f"{self.prefix}{name}",
                value=_shown(value), allowed=TIME_RANGE, fix=fix,
            )  # fmt: skip
        return parsed

    def tagged(self, data: object, name: str, tags: tuple[str, ...]) -> tuple[str, Any]:
        body = self.mapping(data, name)
        if len(body) != 1 or next(iter(body)) not in tags:
            self.fail(
                name,
                f"must have exactly one of {', '.join(tags)}",
                sorted(map(str, body)),
                fix=f"write e.g. {name}: {{{tags[0]}: …}}",
            )
        key = str(next(iter(body)))
        return key, body[key]


def _timing(r: _Reader, data: object) -> Timing:
    from duragent.scheduler.timing import check_timing

    tag, body = r.tagged(data, "schedule", ("at", "every", "cron"))
    fields = r.mapping(body, f"schedule.{tag}")
    timing: Timing
    if tag == "at":
        timing = At(r.time(fields.get("at"), "schedule.at.at"))
    elif tag == "every":
        anchor = fields.get("anchor")
        seconds = fields.get("every_seconds")
        problem = every_problem(seconds)
        if problem is not None:
            raise _error(r, f"schedule.every.{problem.field}", seconds, problem)
        assert isinstance(seconds, int)
        timing = Every(seconds, None if anchor is None else r.time(anchor, "schedule.every.anchor"))
    else:
        expr = r.text(fields, "expr", "schedule.cron.expr")
        tz = fields.get("tz")
        if tz is not None and not isinstance(tz, str):
            r.fail("schedule.cron.tz", "must be an IANA time zone name", tz)
        timing = Cron(expr, tz or None)
    problem = check_timing(timing)
    if problem is not None:
        raise _error(r, f"schedule.{tag}.{problem.field}", getattr(timing, problem.field), problem)
    return timing


def _error(r: _Reader, name: str, value: object, problem: TimingProblem) -> ConfigError:
    """``problem`` as the ``ConfigError`` for field ``name`` of the document ``r`` reads."""
    return ConfigError(
        problem.reason, file=r.file, field=f"{r.prefix}{name}", value=_shown(value),
        allowed=problem.allowed, fix=problem.fix,
    )  # fmt: skip


def _shown(value: object) -> object:
    """``value`` as an error shows it (a time as written; RFC 3339 for a parsed one)."""
    return value.isoformat() if isinstance(value, datetime) else value


def _payload(r: _Reader, data: object) -> Payload:
    tag, body = r.tagged(data, "payload", ("message", "task"))
    fields = r.mapping(body, f"payload.{tag}")
    text = r.text(fields, tag, f"payload.{tag}.{tag}")
    return MessagePayload(text) if tag == "message" else TaskPayload(text)


def _retry(r: _Reader, data: object) -> Retry | None:
    if data is None:
        return None
    fields = r.mapping(data, "retry")
    defaults = Retry()
    values = {
        name: fields.get(name, getattr(defaults, name))
        for name in ("max_retries", "initial_delay_ms", "max_delay_ms")
    }
    problem = retry_problem(values)
    if problem is not None:
        raise _error(r, f"retry.{problem.field}", values[problem.field], problem)
    return Retry(**values)  # checked: whole numbers in range


def parse_schedule(data: object, *, file: Path | None = None, prefix: str = "") -> Schedule:
    """A schedule from a parsed YAML document; ``ConfigError`` naming file and field."""
    r = _Reader(file, prefix)
    doc = r.mapping(data, "(document)")
    sched_id = r.text(doc, "id", "id")
    destination = None
    if doc.get("destination") is not None:
        dest = r.mapping(doc["destination"], "destination")
        destination = Destination(
            r.text(dest, "gateway", "destination.gateway"),
            r.text(dest, "chat_id", "destination.chat_id"),
        )
    status = doc.get("status", "active")
    if status not in STATUSES:
        r.fail("status", "is not a schedule status", status, fix="active, completed or cancelled")
    created = doc.get("created_at")
    return Schedule(
        id=sched_id,
        agent=r.text(doc, "agent", "agent"),
        timing=_timing(r, doc.get("schedule")),
        payload=_payload(r, doc.get("payload")),
        created_at=utc_now() if created is None else r.time(created, "created_at"),
        status=status,
        destination=destination,
        created_by_session=r.text(doc, "created_by_session", "", required=False) or None,
        retry=_retry(r, doc.get("retry")),
        process_handle=r.text(doc, "process_handle", "", required=False) or None,
    )


# --- writing --------------------------------------------------------------------------------


def _timing_document(timing: Timing) -> dict[str, Any]:
    match timing:
        case At(at=at):
            return {"at": {"at": format_time(at)}}
        case Every(every_seconds=seconds, anchor=anchor):
            body: dict[str, Any] = {"every_seconds": seconds}
            if anchor is not None:
                body["anchor"] = format_time(anchor)
            return {"every": body}
        case Cron(expr=expr, tz=tz):
            return {"cron": {"expr": expr} | ({"tz": tz} if tz else {})}


def schedule_document(schedule: Schedule) -> dict[str, Any]:
    """The schedule as its file holds it (the reference's field order)."""
    payload = schedule.payload
    doc: dict[str, Any] = {"id": schedule.id, "agent": schedule.agent}
    if schedule.created_by_session:
        doc["created_by_session"] = schedule.created_by_session
    if schedule.destination is not None:
        doc["destination"] = {
            "gateway": schedule.destination.gateway,
            "chat_id": schedule.destination.chat_id,
        }
    doc["schedule"] = _timing_document(schedule.timing)
    doc["payload"] = (
        {"message": {"message": payload.message}}
        if isinstance(payload, MessagePayload)
        else {"task": {"task": payload.task}}
    )
    doc["created_at"] = format_time(schedule.created_at)
    doc["status"] = schedule.status
    if schedule.retry is not None:
        r = schedule.retry
        doc["retry"] = {
            "max_retries": r.max_retries,
            "initial_delay_ms": r.initial_delay_ms,
            "max_delay_ms": r.max_delay_ms,
        }
    if schedule.process_handle:
        doc["process_handle"] = schedule.process_handle
    return doc
