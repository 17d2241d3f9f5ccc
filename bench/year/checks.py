"""The simulated year's checks on what the tools wrote, the files left open and the logs.

Read back after the run, from the model's record (``YearModel``) and the workspace: cut
outputs read back as printed, memory notes on disk once and recalled, no workspace file but
the live sessions' event logs left open, and ERROR log lines that name no session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bench.year.model import YearModel

__all__ = ["NoteCounts", "log_errors", "open_file_problems", "tool_checks"]

_SESSION_ID = re.compile(r"session_[0-9A-Z]{26}")
RECALL_DAYS = 30
"""The days of notes ``recall`` reads at most (``duragent.tools.memory``), as the model asks."""


@dataclass(frozen=True)
class NoteCounts:
    """The memory notes' account: every recall is found, cut, or of a note a kill kept off
    disk (``found + recalls_cut + never_stored == recalls`` when nothing failed)."""

    remembered: int
    """Notes the model asked to remember."""
    once: int
    """Notes on disk exactly once."""
    remembers_cut: int
    """``remember`` calls a kill cut (the note may be on disk or not, never twice)."""
    recalls: int
    found: int
    """Recalls that returned their note."""
    recalls_cut: int
    """``recall`` calls a kill cut: not judged."""
    never_stored: int
    """Recalls of a note a kill kept off disk (its ``remember`` was cut first): not judged."""
    too_old: int = 0
    """Recalls that missed a note remembered longer ago than ``recall`` reads (the model asks
    for the tool's most, ``RECALL_DAYS``, on the simulated calendar): not judged."""


def tool_checks(root: Path, model: YearModel) -> tuple[list[str], tuple[int, int, int], NoteCounts]:
    """Saved outputs read back right; notes remembered once on disk and recalled.

    A call a kill cut is recorded as interrupted and never run again: its read is not judged,
    its note may be absent (never twice), and its recall is not expected to find it. A recall
    of a note that is on disk must return it, whatever its ``remember`` call was told; a
    ``remember`` that was not cut must say it remembered.
    """
    problems = [
        f"tool_output: {t}: lines came back wrong" for t, ok in model.reads.items() if ok is False
    ]
    reads = (
        len(model.reads),
        sum(1 for ok in model.reads.values() if ok),
        sum(1 for ok in model.reads.values() if ok is None),
    )
    memory = root / ".duragent" / "agents" / "small" / "memory"
    chats = root / ".duragent" / "memory" / "chats" / "small"  # a chat's notes are its own
    daily = [*memory.glob("daily/*.md"), *chats.glob("*/*/daily/*.md")]
    notes = "".join(p.read_text() for p in sorted(daily))
    once = 0
    for note, said in model.remembered.items():
        count = notes.count(note)
        if count > 1:
            problems.append(f"memory: {note!r} written {count} times")
        elif said is False:
            problems.append(f"memory: {note!r}: the tool did not say it remembered it")
        elif said and count == 0:
            problems.append(f"memory: {note!r} said remembered, not on disk")
        once += count == 1
    never_stored = too_old = 0
    for note, ok in model.recalls.items():
        if ok is not False:
            continue
        if model.remembered.get(note) is None and note not in notes:
            never_stored += 1  # its remember was cut before the note was written
        elif model.days_between.get(note, 0.0) >= RECALL_DAYS - 1:
            too_old += 1  # "today" and the 29 days before it: an older note is rightly not read
        else:
            problems.append(f"memory: recall did not return {note!r}")
    counts = NoteCounts(
        remembered=len(model.remembered),
        once=once,
        remembers_cut=sum(1 for said in model.remembered.values() if said is None),
        recalls=len(model.recalls),
        found=sum(1 for ok in model.recalls.values() if ok),
        recalls_cut=sum(1 for ok in model.recalls.values() if ok is None),
        never_stored=never_stored,
        too_old=too_old,
    )
    return problems, reads, counts


def open_file_problems(files: dict[str, int], workspace: Path) -> list[str]:
    """Workspace files the serving process holds at the end beyond what it must.

    A live session actor keeps its ``events.jsonl`` open (closed when the actor stops: idle
    ``sessions.idle_actor_seconds``, over ``sessions.max_live_actors``), and the process its
    workspace lock; any other workspace file open at the end (a snapshot, an archive, a saved
    output, a memory note, a run log) is a descriptor left behind.
    """
    sessions = sum(1 for p in (workspace / "sessions").glob("session_*") if p.is_dir())
    problems = [
        f"open at the end: {n} x {kind}"
        for kind, n in files.items()
        if kind.startswith("/") and kind != "/serve.lock"
    ]
    known = {"events.jsonl", "/serve.lock", "socket", "pipe"}
    problems.extend(
        f"open at the end: {n} x {kind}"
        for kind, n in files.items()
        if "/" not in kind and ":" not in kind and kind not in known
    )
    if files.get("events.jsonl", 0) > sessions:
        problems.append(f"{files['events.jsonl']} event logs open for {sessions} sessions")
    return problems


def log_errors(root: Path) -> tuple[int, list[str]]:
    """ERROR lines in the serving logs (every node's), and those that name no session."""
    total, silent = 0, []
    for log in sorted([*root.glob("serve-*.log"), *root.glob("node-*/serve-*.log")]):
        for line in log.read_text(errors="replace").splitlines():
            if " ERROR " not in line and " CRITICAL " not in line:
                continue
            total += 1
            if not _SESSION_ID.search(line):
                silent.append(line)
    return total, silent
