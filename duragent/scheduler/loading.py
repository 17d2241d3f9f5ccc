"""Reading the schedules at start: one bad record is set aside, never fatal (issue 34).

A schedule file once held ``every_seconds: 10**20``; at the next start computing its due
time raised and the whole scheduler did not start, so no schedule of any chat fired again.
Now each stored schedule is read on its own, and one that cannot be used (YAML that does
not parse, a field missing or out of range: ``model.parse_schedule``, ``bounds``; an id
that does not match its file name; anything else reading it raises) is

- **skipped**: every other schedule loads and runs;
- **moved aside** when it is a file (``ScheduleFiles.quarantine``: to
  ``schedules/_quarantine/<id>.yaml`` with the reason beside it), as sessions are; a row of
  the database (``store.backend: postgres``) is left where it is and skipped at every read;
- **reported**: logged once, and listed (``report``) in ``/readyz``'s details and by
  ``duragent doctor``, also after a restart (the quarantine folder is read each time).

A declared schedule (``spec.schedules[]``) with a mistake is skipped and reported the same
way; its agent.yaml is the operator's and is never moved. A file the machine cannot read
(``OSError``) is reported and left in place: the fault is the disk's, not the record's.
The database being away (``StorageError``) is not a bad record: it propagates (the service
does not start, or a re-read is tried again later).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import yaml

from duragent.agents import AgentCatalog
from duragent.errors import ConfigError, StorageError
from duragent.scheduler.model import Schedule, parse_schedule
from duragent.store.protocols import ScheduleStorage
from duragent.store.schedule_files import ScheduleFiles

__all__ = ["DECLARED_EPOCH", "ScheduleLoader", "Skipped", "declared_id", "read_declared"]

log = logging.getLogger(__name__)

DECLARED_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""A declared schedule's ``created_at``: it has none, so ``every_seconds`` without an anchor
counts from the epoch (``3600`` is on the hour, across restarts); which due times are its
own to run comes from its run log (``registered`` when first seen)."""


def declared_id(agent: str, name: str) -> str:
    """The id of a schedule ``agent`` declares as ``name`` (stable: its run log carries over)."""
    return f"decl_{agent}_{name}"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A schedule not loaded: where it was, why, and where it was moved (None: not moved)."""

    record: str
    reason: str
    moved_to: str | None = None

    def document(self) -> dict[str, str]:
        """As ``/readyz`` shows it."""
        doc = {"record": self.record, "reason": self.reason}
        return doc | ({"moved_to": self.moved_to} if self.moved_to else {})


_Found = tuple[list[ConfigError], list[Skipped]]
"""What a read skipped: the problems, and the same as reported (``Skipped``)."""


class ScheduleLoader:
    """Reads stored and declared schedules, setting bad ones aside (module docstring)."""

    def __init__(self, files: ScheduleStorage, agents: Callable[[], AgentCatalog]) -> None:
        self.files = files
        self._agents = agents
        self._logged: set[str] = set()
        self._stored: _Found = ([], [])
        self._declared: _Found = ([], [])

    @property
    def problems(self) -> list[ConfigError]:
        """What the last reads skipped, each naming file and field (quarantined or not).

        The stored schedules' as the last ``load`` found them, the declared ones' as the last
        ``declared`` did (a reload of the agents reads those again, and only those).
        """
        return self._stored[0] + self._declared[0]

    @property
    def skipped(self) -> list[Skipped]:
        """The same, as reported; with where each file was moved."""
        return self._stored[1] + self._declared[1]

    def path(self, schedule_id: str) -> Path:
        """Where a schedule is kept, for messages (a file, or a row of the database)."""
        if isinstance(self.files, ScheduleFiles):
            return self.files.path(schedule_id)
        return Path(f"<database>/schedules/{schedule_id}")

    def load(self) -> list[Schedule]:
        """Every usable schedule, stored then declared; bad ones set aside and reported."""
        return self.stored() + self.declared()

    def stored(self) -> list[Schedule]:
        """The usable schedule files (or rows); bad ones set aside and reported."""
        reported: _Found = ([], [])
        if isinstance(self.files, ScheduleFiles):  # moved aside earlier: still reported
            for path, reason in self.files.quarantined().items():
                reported[1].append(Skipped(str(path), reason, str(path)))
        found: list[Schedule] = []
        for sched_id in self.files.ids():
            schedule = self._read(sched_id, reported)
            if schedule is not None:
                found.append(schedule)
        self._stored = reported
        return found

    def _read(self, sched_id: str, into: _Found) -> Schedule | None:
        path = self.path(sched_id)
        try:
            schedule = parse_schedule(self.files.get(sched_id), file=path)
        except StorageError:
            raise
        except yaml.YAMLError as exc:
            self._bad(into, sched_id, ConfigError(f"YAML syntax error: {exc}", file=path))
            return None
        except ConfigError as exc:
            self._bad(into, sched_id, exc)
            return None
        except OSError as exc:  # the disk's fault, not the record's: left where it is
            self._report(ConfigError(f"could not be read: {exc}", file=path), None, into)
            return None
        except Exception as exc:  # whatever else a record can make a parser raise
            cause = f"could not be read: {type(exc).__name__}: {exc}"
            self._bad(into, sched_id, ConfigError(cause, file=path))
            return None
        if schedule.id != sched_id:
            self._bad(into, sched_id, ConfigError(
                "does not match the file name", file=path, field="id", value=schedule.id,
                fix=f"set id: {sched_id} or rename the file",
            ))  # fmt: skip
            return None
        return schedule

    def _bad(self, into: _Found, sched_id: str, error: ConfigError) -> None:
        """A record that cannot be used: moved aside when it is a file, and reported."""
        moved: Path | None = None
        if isinstance(self.files, ScheduleFiles):
            try:
                moved = self.files.quarantine(sched_id, error.render())
            except OSError as exc:
                log.error("schedule %s could not be moved aside: %s", sched_id, exc)
        self._report(error, moved, into)

    def _report(self, error: ConfigError, moved_to: Path | None, into: _Found) -> None:
        if moved_to is not None:
            log.error("schedule skipped and moved to %s: %s", moved_to, error)
        elif str(error) not in self._logged:  # re-read every few seconds with several nodes
            self._logged.add(str(error))
            log.error("schedule skipped (it is kept as it is): %s", error)
        into[0].append(error)
        where = str(error.file) if error.file is not None else "(unknown)"
        into[1].append(Skipped(where, error.render(), str(moved_to) if moved_to else None))

    def declared(self) -> list[Schedule]:
        """The schedules agents declare in ``spec.schedules[]`` now (bad ones reported)."""
        found, problems = read_declared(self._agents())
        reported: _Found = ([], [])
        for problem in problems:
            self._report(problem, None, reported)
        self._declared = reported
        return found

    def report(self) -> list[dict[str, str]]:
        """Every schedule set aside, each with its reason.

        Those the last ``load`` skipped and the files an earlier start moved aside (read by
        ``load``: no disk access here, ``/readyz`` asks).
        """
        return [s.document() for s in self.skipped]


def read_declared(catalog: AgentCatalog) -> tuple[list[Schedule], list[ConfigError]]:
    """Every agent's ``spec.schedules[]`` as schedules, and the problems of those skipped.

    Each problem names the agent.yaml and the field (``spec.schedules[0].schedule.every…``).
    """
    found: list[Schedule] = []
    problems: list[ConfigError] = []
    for agent in catalog.agents.values():
        for i, spec in enumerate(agent.spec.schedules):
            doc = spec.model_dump(exclude_none=True) | {
                "id": declared_id(agent.name, spec.name),
                "agent": agent.name,
                "created_at": DECLARED_EPOCH,
            }
            doc.pop("name")
            file = agent.directory / "agent.yaml"
            try:
                schedule = parse_schedule(doc, file=file, prefix=f"spec.schedules[{i}].")
            except ConfigError as exc:
                problems.append(exc)
                continue
            found.append(replace(schedule, declared_in=file))
    return found, problems
