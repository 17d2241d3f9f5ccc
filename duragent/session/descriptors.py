"""The open-file budget: raise the limit, share it out, and recognise running out.

Every live session actor keeps its ``events.jsonl`` open (one descriptor: an append is one
``write``; see specs/…durable-sessions.md), so the old default of 1,000 live actors did not
fit the common ``ulimit -n 1024`` beside the HTTP connections: opens failed with ``EMFILE``
and requests answered 500 or were reset. Now:

1. ``raise_open_file_limit`` lifts the soft ``RLIMIT_NOFILE`` to the hard limit at start (at
   most ``CEILING``, or what the configuration needs if more: programs that close every
   possible descriptor get slow with a limit of a million, and tool processes inherit it).
2. ``plan_descriptors`` shares the limit out: a fixed reserve (standard streams, the event
   loop, the listening socket, the lock, log files: 10 measured idle), two per ask admitted
   to an actor thread (a snapshot's temp file and its directory fsync), tool processes'
   pipes, two per HTTP connection (its socket and its turn's provider connection), and live
   actors get the rest. When both do not fit, connections and actors split what remains and
   the runtime logs a WARNING saying what was lowered and how to raise the limit.
3. ``is_out_of_descriptors`` tells ``EMFILE``/``ENFILE`` apart from other failures, so the
   registry evicts idle actors and retries instead of failing the request (a request whose
   operation is declared ``retry_safe``, see ``ops``).

The HTTP app serves at most the planned number of requests at once (``max_connections``
lowered; the others wait for a slot, as over the configured limit), which bounds provider
connections and tool pipes; and ``connection_cap`` bounds accepted sockets to the same share
(the HTTP server leaves further connections in the listen queue), so far more simultaneous
clients than the share wait instead of running the server out of files.
"""

from __future__ import annotations

import errno
import resource
from dataclasses import dataclass

__all__ = [
    "CEILING",
    "MIN_ACTORS",
    "PER_ACTIVE_ASK",
    "PER_CONNECTION",
    "RESERVED_FIXED",
    "RESERVED_TOOLS",
    "Budget",
    "DescriptorPlan",
    "connection_cap",
    "is_out_of_descriptors",
    "needed",
    "plan_descriptors",
    "raise_open_file_limit",
]

CEILING = 65536
"""The soft limit is raised to the hard limit, but not beyond this unless the plan needs it."""
RESERVED_FIXED = 32
RESERVED_TOOLS = 32
PER_ACTIVE_ASK = 2
PER_CONNECTION = 2
MIN_ACTORS = 8
"""Fewer live actors than this and sessions would restart from disk on nearly every ask."""

_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE})


@dataclass(frozen=True, slots=True)
class DescriptorPlan:
    """How the open-file limit is shared (see module docstring)."""

    limit: int
    reserved: int
    connections: int
    actors: int


def needed(*, max_live: int, max_connections: int, active_asks: int) -> int:
    """Descriptors a configuration needs to run without lowering anything."""
    return (
        RESERVED_FIXED
        + RESERVED_TOOLS
        + PER_ACTIVE_ASK * active_asks
        + PER_CONNECTION * max_connections
        + max_live
    )


def raise_open_file_limit(wanted: int = 0) -> tuple[int, int]:
    """Lift the soft RLIMIT_NOFILE towards the hard limit; return (before, after).

    The target is the hard limit, at most ``max(CEILING, wanted)``. A platform that refuses
    (macOS caps at ``OPEN_MAX``) keeps the highest value it accepts.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = max(CEILING, wanted)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft != resource.RLIM_INFINITY and soft >= target:
        return soft, soft
    if soft == resource.RLIM_INFINITY:
        return soft, soft
    for attempt in (target, min(target, 10240)):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (attempt, hard))
        except (ValueError, OSError):
            continue
        return soft, attempt
    return soft, soft


def plan_descriptors(
    limit: int, *, max_live: int, max_connections: int, active_asks: int
) -> DescriptorPlan:
    """Share ``limit`` descriptors between connections and live actors (module docstring)."""
    reserved = RESERVED_FIXED + RESERVED_TOOLS + PER_ACTIVE_ASK * active_asks
    if limit == resource.RLIM_INFINITY:
        return DescriptorPlan(limit, reserved, max_connections, max_live)
    room = max(0, limit - reserved)
    if PER_CONNECTION * max_connections + max_live <= room:
        return DescriptorPlan(limit, reserved, max_connections, max_live)
    actors = min(max_live, max(room // 2, room - PER_CONNECTION * max_connections))
    connections = max(1, min(max_connections, (room - actors) // PER_CONNECTION))
    return DescriptorPlan(limit, reserved, connections, max(MIN_ACTORS, actors))


def connection_cap(plan: DescriptorPlan) -> int | None:
    """Connections the HTTP server may keep open at once: what the plan leaves beside actors.

    Each may carry a request with its provider connection, so ``PER_CONNECTION`` each; never
    below ``plan.connections``. None when the limit is unlimited.
    """
    if plan.limit == resource.RLIM_INFINITY:
        return None
    spare = (plan.limit - plan.reserved - plan.actors) // PER_CONNECTION
    return max(plan.connections, spare)


def is_out_of_descriptors(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) is the process or the system out of open files."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _EXHAUSTED:
            return True
        current = current.__cause__ or current.__context__
    return False


@dataclass(frozen=True, slots=True)
class Budget:
    """What ``budget`` did: the plan, and what to tell the operator."""

    plan: DescriptorPlan
    raised_from: int
    warnings: tuple[str, ...]


def budget(*, max_live: int, max_connections: int, active_asks: int) -> Budget:
    """Raise the limit, plan for the configuration, and explain anything lowered."""
    need = needed(max_live=max_live, max_connections=max_connections, active_asks=active_asks)
    before, limit = raise_open_file_limit(need)
    plan = plan_descriptors(
        limit, max_live=max_live, max_connections=max_connections, active_asks=active_asks
    )
    warnings: list[str] = []
    if plan.actors < max_live:
        warnings.append(
            f"sessions.max_live_actors {max_live} lowered to {plan.actors}: each live session "
            f"keeps its event log open and the open-file limit is {limit} ({plan.reserved} "
            f"reserved for the server and tools, {PER_CONNECTION} per connection for "
            f"{plan.connections} connections); idle sessions restart from disk when used. To "
            f"keep {max_live}, raise the limit to {need} (ulimit -n, or LimitNOFILE= for "
            "systemd) or lower server.max_connections"
        )
    if plan.connections < max_connections:
        warnings.append(
            f"server.max_connections {max_connections} lowered to {plan.connections}: that many "
            f"requests fit in the open-file limit {limit} beside {plan.actors} live sessions "
            "(further requests wait for a slot, further connections wait to be accepted). "
            f"Raise the limit to {need} to serve them all at once"
        )
    return Budget(plan=plan, raised_from=before, warnings=tuple(warnings))
