"""What the bench reads of what ``duragent serve`` stored, whichever store holds it.

The month will run its first half on the file store and its second on PostgreSQL with two
nodes (``specs/202612060130.month-postgres-half-plan.md`` §1). Every bench reader used to open
the serving workspace's files; it now asks a ``StoreView``, so the same reader works on
either store and across the switch:

- ``FileView``: the workspace's files, read exactly as the readers read them before;
- ``PgView`` (``store_view_pg``): the same reads as SQL on the schema the nodes share;
- ``SwitchedView``: ``FileView`` until ``switch()`` (called once the node is stopped and the
  workspace copied into PostgreSQL), then ``PgView``. A run log is the file's lines followed
  by the database's rows, the lines the copy carried over counted once: a reader judging a
  schedule over the whole run sees its whole history.

A view only reads: it never takes a lease nor writes a row, so it cannot change what it
measures.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import yaml

from bench.year.schedule import read_lines
from duragent.errors import StorageError
from duragent.store import SessionStore
from duragent.testing.campaign_workspace import recorded_message_ids

__all__ = ["FileView", "StoreView", "SwitchedView", "chat_of", "last_line", "merge_runs"]

Run = dict[str, Any]


class StoreView(Protocol):
    """The bench's reads of a serving workspace's store (module docstring)."""

    def last_runs(self, schedule_ids: Sequence[str]) -> dict[str, Run | None]:
        """Each schedule's newest run line: None without one; ``{}`` when it cannot be read
        yet (a line being written). The clock's brake asks this every tick."""
        ...

    def runs(self, schedule_id: str) -> list[Run]:
        """The schedule's run log, oldest first (unreadable lines skipped)."""
        ...

    def made_schedules(self) -> dict[str, dict[str, Any]]:
        """Id → document of each schedule made from a chat (``sched_*``; a declared one
        has no document)."""
        ...

    def session_chats(self) -> dict[str, int | None]:
        """Id → chat id of each live session (``session_*``); None when none is known."""
        ...

    def recorded_message_ids(self) -> set[str]:
        """The platform message ids the sessions' events recorded (live, archived and
        quarantined)."""
        ...

    def attachment_bytes(self) -> int:
        """Bytes the store keeps for the sessions' attachments (the per-node media index and
        agents' ``files/`` are not the store's: the caller adds each node's folder)."""
        ...

    def db_bytes(self) -> int:
        """The database's size on disk (0: no database)."""
        ...

    def inbound_claims(self, gateway: str) -> dict[str, tuple[str, bool]]:
        """Platform message id → (node that claimed it, whether it was settled), for the
        messages ``gateway`` delivered to several nodes (the inbound ledger)."""
        ...


class FileView:
    """The file store under ``root`` (the folder holding ``.duragent``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.duragent = root / ".duragent"
        self.sessions = self.duragent / "sessions"
        self.schedules = self.duragent / "schedules"

    def last_runs(self, schedule_ids: Sequence[str]) -> dict[str, Run | None]:
        """Read afresh each time: a tail read of a small file costs less than a query."""
        return {sid: last_line(self.schedules / "runs" / f"{sid}.jsonl") for sid in schedule_ids}

    def runs(self, schedule_id: str) -> list[Run]:
        return read_lines(self.schedules / "runs" / f"{schedule_id}.jsonl")

    def made_schedules(self) -> dict[str, dict[str, Any]]:
        made = {}
        for path in sorted(self.schedules.glob("sched_*.yaml")):
            made[path.stem] = yaml.safe_load(path.read_text()) or {}
        return made

    def session_chats(self) -> dict[str, int | None]:
        store = SessionStore(self.sessions)
        return {p.name: chat_of(store, p.name) for p in sorted(self.sessions.glob("session_*"))}

    def recorded_message_ids(self) -> set[str]:
        return recorded_message_ids(self.root)

    def attachment_bytes(self) -> int:
        """Every file in a session's ``attachments/`` folder (quarantined sessions' too)."""
        return sum(
            p.stat().st_size
            for p in self.sessions.rglob("*")
            if "attachments" in p.relative_to(self.sessions).parts and p.is_file()
        )

    def db_bytes(self) -> int:
        return 0

    def inbound_claims(self, gateway: str) -> dict[str, tuple[str, bool]]:
        return {}  # one node on files: its claims are in its memory


class SwitchedView:
    """``before`` until ``switch()``, then ``after`` (module docstring).

    Call ``switch()`` once nothing writes ``before`` any more (the node stopped and its store
    copied): ``before``'s run logs are read once after it and kept as they were.
    """

    def __init__(self, before: StoreView, after: StoreView) -> None:
        self.before = before
        self.after = after
        self.switched = False
        self._kept: dict[str, list[Run]] = {}
        """Schedule id → ``before``'s run log, read after the switch (it no longer changes)."""

    def switch(self) -> None:
        """Read ``after`` from now on (run logs merged with ``before``'s)."""
        self.switched = True

    @property
    def current(self) -> StoreView:
        return self.after if self.switched else self.before

    def _before_runs(self, schedule_id: str) -> list[Run]:
        if schedule_id not in self._kept:
            self._kept[schedule_id] = self.before.runs(schedule_id)
        return self._kept[schedule_id]

    def last_runs(self, schedule_ids: Sequence[str]) -> dict[str, Run | None]:
        """The merged log's last line: ``after``'s, else ``before``'s last readable one."""
        if not self.switched:
            return self.before.last_runs(schedule_ids)
        lasts = dict(self.after.last_runs(schedule_ids))  # a copy: ``after`` may cache its own
        for sid in schedule_ids:
            if lasts.get(sid) is None:
                earlier = self._before_runs(sid)
                lasts[sid] = earlier[-1] if earlier else None
        return lasts

    def runs(self, schedule_id: str) -> list[Run]:
        if not self.switched:
            return self.before.runs(schedule_id)
        return merge_runs(self._before_runs(schedule_id), self.after.runs(schedule_id))

    def made_schedules(self) -> dict[str, dict[str, Any]]:
        return self.current.made_schedules()

    def session_chats(self) -> dict[str, int | None]:
        return self.current.session_chats()

    def recorded_message_ids(self) -> set[str]:
        return self.current.recorded_message_ids()

    def attachment_bytes(self) -> int:
        return self.current.attachment_bytes()

    def db_bytes(self) -> int:
        return self.current.db_bytes()

    def inbound_claims(self, gateway: str) -> dict[str, tuple[str, bool]]:
        return self.current.inbound_claims(gateway)


def merge_runs(first: list[Run], then: list[Run]) -> list[Run]:
    """``first`` followed by ``then`` without the lines ``then`` starts with that end ``first``.

    The copy appends a log's newest runs (``duragent.store.copy``), so the database's log
    starts with the file's last lines (all of them, or fewer once pruned): the longest
    suffix of ``first`` that is a prefix of ``then`` is one stretch of runs, counted once. Any
    other equal lines stay (a second ``registered`` line is a finding, not a duplicate).
    Without a copied log (no overlap) the two are simply joined.
    """
    for start in range(max(0, len(first) - len(then)), len(first)):
        if first[start] == then[0] and first[start:] == then[: len(first) - start]:
            return first + then[len(first) - start :]
    return first + then


def last_line(path: Path) -> Run | None:
    """The last JSON line of a run log: None when there is no log, ``{}`` when the line
    cannot be read (caught half-written: a reader is not kept from a write in progress)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 1024))
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    if not lines or not lines[-1].endswith(b"}"):
        return {}
    try:
        value: Run = json.loads(lines[-1])
    except ValueError:
        return {}
    return value


def chat_of(store: SessionStore, session_id: str) -> int | None:
    """The chat id of a session: its snapshot's, else its live log's first event's (the
    event log is archived and started again as a session grows, its snapshot is not)."""
    try:
        header = store.header(session_id) or {}
        chat = header.get("config", {}).get("gateway_chat_id")
        if chat is None:
            with (store.directory(session_id) / "events.jsonl").open("rb") as f:
                chat = json.loads(f.readline()).get("gateway_chat_id")
        return None if chat is None else int(chat)
    except (OSError, ValueError, AttributeError, TypeError, StorageError):
        return None
