"""The child program of the SIGKILL crash tests, and the parent's machinery to drive and check it.

Run as a program (``python tests/session/crash_worker.py SESSIONS_DIR ACK_FILE SEED [...]``; it
imports only ``duragent`` and the standard library, so the working directory does not matter):

1. it recovers every session the ack file names (``info`` on each: load snapshot, replay,
   repair), printing ``RECOVERING`` before and ``READY <ms> <sessions>`` after;
2. in ``campaign`` mode it then drives several sessions concurrently (user messages, tool
   rounds with batched results, final replies, status changes, forced flushes and snapshots,
   redeliveries of platform message ids, and real tool turns: the turn runner with the offline
   model calling ``bash``, whose command first writes a marker file, then sleeps, so kills land
   while tools run) until it is killed; in ``script`` mode it runs a short scripted
   conversation, prints ``DONE`` and waits to be killed.

The check then requires, besides everything acknowledged: every tool that started (its marker
file exists) has its call on disk and exactly one result, and no process of its group
outlived the worker's SIGKILL.

After every durable acknowledgement (the awaited call returned) it appends one JSON line to the
ack file and fsyncs it; the ack file is the ground truth of what was acknowledged. Batched tool
events are acknowledged only after the durable write that carried them returned.

The parent side (``Worker``, ``run_campaign``, ``verify``) is imported by
``tests/session/test_crash_recovery.py`` and ``bench/restarts/crash.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import mmap
import os
import random
import select
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duragent.agents import load_catalog
from duragent.core.events import Event, EventType
from duragent.core.messages import Role, ToolCall, Usage
from duragent.core.snapshot import SessionStatus
from duragent.session import NewSession, RegistrySettings, SessionHandle, SessionRegistry
from duragent.session.state import INTERRUPTED_RESULT
from duragent.store import SessionStore
from duragent.store.event_log import ARCHIVE_FILENAME
from duragent.store.fileops import FileOps, OsFileOps
from duragent.turns import Complete, TurnRunner
from duragent.turns.providers import ProviderPool

WORKER_PATH = Path(__file__).resolve()
AGENT = "crash-agent"
MESSAGE_LIMIT = 100
TOOL_TURNS = 0.25
"""Share of the campaign's turns that run a real ``bash`` tool through the turn runner."""
AGENT_YAML = f"""\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {AGENT}
spec:
  model:
    provider: offline
    name: duragent-offline
  tools:
    - type: builtin
      name: bash
"""
"""Layer 1 cap of the sessions the worker creates (small, so trimming is exercised)."""
RUN_ID = os.urandom(6).hex()
"""Makes every text this process writes unique across restarts."""

# --------------------------------------------------------------------------------------------
# Content: unique, hashable, with unicode and sizes that span pages
# --------------------------------------------------------------------------------------------

_PIECES = (
    "durable",
    "actor",
    "fsync",
    "snapshot",
    "compaction",
    "checkpoint",
    "持久化的智能体运行时",
    "長い会話でもエージェントは",
    "세션은 디스크에 기록되며",
    "Ελληνικά κείμενα",
    "кириллица и текст",
    "עברית",
    "العربية",
    "emoji 😀🚀🧪 👩‍💻 🏳️‍🌈",
    "e\u0301 combining",
    "line\u2028separator",
    "nel\x85char",
    "tab\tand\r\nCRLF",
    '"quotes" and \\ back\\slash',
    '{"seq": 999999, "type": "user_message"}',
    "\n\n",
    "  trailing  ",
    "\ufeffbom",
    "nul\x00byte",
    "\U0010fffd plane 16",
    "- yaml: [dash]",
    "# not a comment",
)


def content_sha(text: str | None) -> str:
    """Short sha256 of a message's text (None counts as empty)."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:20]


def pick_size(rng: random.Random, *, huge: bool = False) -> int:
    """Mostly small, sometimes multi-KB, rarely tens (or, for tool output, hundreds) of KB."""
    r = rng.random()
    if huge and r < 0.02:
        return rng.randint(64_000, 200_000)
    if r < 0.55:
        return rng.randint(1, 120)
    if r < 0.85:
        return rng.randint(120, 2_000)
    if r < 0.97:
        return rng.randint(2_000, 16_000)
    return rng.randint(16_000, 48_000)


def make_text(rng: random.Random, tag: str, size: int) -> str:
    """``«tag» `` followed by about ``size`` characters of mixed scripts and awkward bytes."""
    parts = [f"«{tag}» "]
    length = len(parts[0])
    target = length + size
    while length < target:
        piece = rng.choice(_PIECES) if rng.random() < 0.6 else f"w{rng.getrandbits(20):x}"
        parts.append(piece)
        parts.append(" ")
        length += len(piece) + 1
    return "".join(parts)


def user_text(session_id: str, platform_id: str) -> str:
    """The content of a user message: fixed by its platform id, so a redelivery is identical."""
    rng = random.Random(f"{session_id}/{platform_id}")
    return make_text(rng, f"user {platform_id}", pick_size(rng))


# --------------------------------------------------------------------------------------------
# Phase counters: which durable step each thread is inside (read by the parent after SIGSTOP)
# --------------------------------------------------------------------------------------------

PHASES = ("append", "snapshot", "rollover", "recovery", "tool")
_PHASE_STRUCT = struct.Struct("<5q")


class PhaseCounters:
    """Per-phase counts of threads inside it, in a small shared (mmap'd) file."""

    def __init__(self, path: Path) -> None:
        path.write_bytes(bytes(_PHASE_STRUCT.size))
        self._fh = path.open("r+b")
        self._map = mmap.mmap(self._fh.fileno(), _PHASE_STRUCT.size)
        self._lock = threading.Lock()

    def add(self, index: int, delta: int) -> None:
        with self._lock:
            values = list(_PHASE_STRUCT.unpack_from(self._map))
            values[index] += delta
            _PHASE_STRUCT.pack_into(self._map, 0, *values)


def read_phases(path: Path) -> list[str]:
    """The phases some thread of a (stopped) worker is inside."""
    try:
        values = _PHASE_STRUCT.unpack(path.read_bytes()[: _PHASE_STRUCT.size])
    except (OSError, struct.error):
        return []
    return [name for name, count in zip(PHASES, values, strict=True) if count > 0]


def instrument(counters: PhaseCounters) -> None:
    """Count entries into the store's durable steps (in the worker process only)."""
    from duragent.store.event_log import EventLog
    from duragent.store.snapshot_file import SnapshotFile

    targets = ((EventLog, "append", 0), (SnapshotFile, "write", 1), (EventLog, "roll_over", 2))
    for cls, name, index in targets:
        original = getattr(cls, name)

        def wrapper(
            self: Any, *args: Any, _orig: Any = original, _i: int = index, **kw: Any
        ) -> Any:
            counters.add(_i, 1)
            try:
                return _orig(self, *args, **kw)
            finally:
                counters.add(_i, -1)

        setattr(cls, name, wrapper)

    import duragent.tools.bash as bash_module

    # The bash tool's own reference to run_process (it imported the name).
    run_process = getattr(bash_module, "run_process")  # noqa: B009

    async def counted(*args: Any, **kw: Any) -> Any:
        counters.add(PHASES.index("tool"), 1)
        try:
            return await run_process(*args, **kw)
        finally:
            counters.add(PHASES.index("tool"), -1)

    setattr(bash_module, "run_process", counted)  # noqa: B010


class ShortWriteOps(OsFileOps):
    """The real OS calls, but ``write`` takes at most a few KB per call, as POSIX allows.

    The event log loops until everything is written, so a kill between two calls tears a line
    (a plain SIGKILL almost never lands inside one fast ``write`` to the page cache).
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def write(self, fd: int, data: bytes) -> int:
        with self._lock:
            limit = self._rng.randint(256, 8192)
        return os.write(fd, data[:limit])


class ArchiveTearingOps(OsFileOps):
    """The real OS calls, except that the first archive write stops halfway and the process
    SIGKILLs itself: what the kernel does to a large ``write`` when SIGKILL arrives during it.
    """

    def __init__(self) -> None:
        self._archives: set[int] = set()

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        fd = super().open_append(path, sync=sync)
        if path.name == ARCHIVE_FILENAME:
            self._archives.add(fd)
        else:
            self._archives.discard(fd)
        return fd

    def write(self, fd: int, data: bytes) -> int:
        if fd in self._archives and len(data) > 1:
            os.write(fd, data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        return os.write(fd, data)


# --------------------------------------------------------------------------------------------
# The ack file
# --------------------------------------------------------------------------------------------


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete, well-formed line of the ack file (a torn last line is not an ack)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "kind" in record:
            records.append(record)
    return records


class AckLog:
    """Append-and-fsync JSON lines; starts on a fresh line if a kill tore the last one."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        size = os.fstat(self._fd).st_size
        if size:
            with path.open("rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    os.write(self._fd, b"\n")

    def write(self, *records: dict[str, Any]) -> None:
        if not records:
            return
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        os.write(self._fd, data.encode())
        os.fsync(self._fd)


@dataclass
class SessionBook:
    """What the ack file says about one session."""

    next_message: int = 1
    intent: str | None = None  # platform id sent last, if it was never acknowledged
    acked_pids: list[str] = field(default_factory=list)


def read_book(records: list[dict[str, Any]]) -> dict[str, SessionBook]:
    """Acknowledged sessions (in creation order) and their message counters."""
    book: dict[str, SessionBook] = {}
    for r in records:
        sid = r.get("sid")
        if r["kind"] == "session" and isinstance(sid, str):
            book.setdefault(sid, SessionBook())
        elif sid in book and r["kind"] == "intent":
            entry = book[sid]
            entry.intent = r["pid"]
            entry.next_message = max(entry.next_message, int(r["pid"].rsplit(":", 1)[1]) + 1)
        elif sid in book and r["kind"] == "user":
            entry = book[sid]
            if entry.intent == r["pid"]:
                entry.intent = None
            if not r.get("dup"):
                entry.acked_pids.append(r["pid"])
    return book


# --------------------------------------------------------------------------------------------
# The worker
# --------------------------------------------------------------------------------------------


class Driver:
    """Plays one session's conversation through the registry, acknowledging as it goes."""

    def __init__(
        self,
        registry: SessionRegistry,
        ack: AckLog,
        sid: str,
        entry: SessionBook,
        rng: random.Random,
        run: str,
        tools: ToolBench | None = None,
    ) -> None:
        self.run_id = run
        self.tools = tools
        self.registry = registry
        self.ack = ack
        self.sid = sid
        self.entry = entry
        self.rng = rng
        self.unflushed: list[dict[str, Any]] = []
        self.tags = 0
        self.calls: dict[str, str] = {}

    def tag(self, what: str) -> str:
        self.tags += 1
        return f"{what} {self.sid[-6:]}.{self.run_id}.{self.tags}"

    @property
    def session(self) -> SessionHandle:
        return self.registry.handle(self.sid)

    def acknowledge(self, *records: dict[str, Any]) -> None:
        """A durable write returned: everything queued before it is durable too."""
        self.ack.write(*self.unflushed, *records)
        self.unflushed.clear()

    # --- steps ------------------------------------------------------------------------------

    async def user(self, pid: str | None = None, *, redelivered: bool = False) -> None:
        if pid is None:
            pid = f"{self.sid}:{self.entry.next_message}"
            self.entry.next_message += 1
            self.ack.write({"kind": "intent", "sid": self.sid, "pid": pid})
        content = user_text(self.sid, pid)
        before = (await self.session.info()).last_seq if redelivered else None
        result = await self.session.add_user_message(content, platform_message_id=pid)
        record = {
            "kind": "user",
            "sid": self.sid,
            "pid": pid,
            "seq": result.seq,
            "sha": content_sha(content),
            "dup": result.duplicate,
            "answered": result.answered,
        }
        if redelivered:
            record["before"] = before
        self.acknowledge(record)
        if not result.duplicate:
            self.entry.acked_pids.append(pid)

    async def final(self) -> None:
        content = make_text(self.rng, self.tag("final"), pick_size(self.rng))
        usage = Usage(prompt_tokens=self.rng.randint(1, 9000), completion_tokens=7)
        seq = await self.session.add_assistant_response(content, usage=usage)
        self.acknowledge(
            {"kind": "final", "sid": self.sid, "seq": seq, "sha": content_sha(content)}
        )

    async def tool_round(self) -> None:
        rng = self.rng
        calls = tuple(
            ToolCall(
                id=f"call_{rng.getrandbits(64):016x}",
                name=rng.choice(("search", "read_file", "bash")),
                arguments=json.dumps({"q": make_text(rng, "arg", rng.randint(1, 200))}),
            )
            for _ in range(rng.randint(1, 3))
        )
        content = make_text(rng, self.tag("calls"), pick_size(rng)) if rng.random() < 0.5 else ""
        seq = await self.session.add_assistant_response(content, tool_calls=calls)
        self.unflushed.append(
            {
                "kind": "tool_call",
                "sid": self.sid,
                "seq": seq,
                "sha": content_sha(content),
                "call_ids": [c.id for c in calls],
            }
        )
        for c in calls:
            result = make_text(rng, self.tag("result"), pick_size(rng, huge=True))
            seq = await self.session.add_tool_result(
                call_id=c.id, success=rng.random() < 0.9, content=result
            )
            self.unflushed.append(
                {
                    "kind": "tool_result",
                    "sid": self.sid,
                    "seq": seq,
                    "sha": content_sha(result),
                    "call_id": c.id,
                }
            )
            if rng.random() < 0.3:
                await self.session.flush()
                self.acknowledge()

    async def tool_turn(self, tools: ToolBench) -> None:
        """A real turn: the runner, the offline model, ``bash`` (marker file first, then sleep)."""
        self.tags += 1
        token = f"tool-{self.sid[-8:]}-{self.run_id}-{self.tags}"
        marker = tools.markers / token
        # Mostly short; rarely longer than the parent waits for a killed group to be gone, so
        # a process that outlived the kill is seen before it could end by itself (rarely: a
        # session in a long sleep does nothing else until the kill).
        pause = self.rng.choices((0.02, 0.05, 0.1, 0.3, 5.0), weights=(6, 6, 6, 6, 1))[0]
        command = f"echo $$ > {marker}; echo {token}; sleep {pause}"
        content = f"run {token}\n!call bash " + json.dumps({"command": command})
        result = await tools.runner.run(self.sid, content)
        if not isinstance(result, Complete) or result.reply_seq is None:
            raise AssertionError(f"tool turn {token} ended {result.status}: {result}")
        self.acknowledge(
            {
                "kind": "final",
                "sid": self.sid,
                "seq": result.reply_seq,
                "sha": content_sha(result.content),
            }
        )

    async def set_status(self, status: str) -> None:
        if await self.session.set_status(SessionStatus(status)):
            seq = (await self.session.info()).last_seq
            self.acknowledge({"kind": "status", "sid": self.sid, "seq": seq, "status": status})

    # --- the loop ---------------------------------------------------------------------------

    async def resume(self) -> None:
        """Settle what a kill left: a repaired status, an unacknowledged inbound message."""
        info = await self.session.info()
        if info.status is not SessionStatus.ACTIVE:
            await self.set_status(SessionStatus.ACTIVE.value)
        if self.entry.intent is not None:
            pid, self.entry.intent = self.entry.intent, None
            await self.user(pid, redelivered=True)  # the platform redelivers it

    async def turn(self) -> None:
        rng = self.rng
        if rng.random() < 0.03 and self.entry.acked_pids:
            await self.user(rng.choice(self.entry.acked_pids[-200:]), redelivered=True)
        await self.user()
        if rng.random() < 0.15:
            await self.user()  # a second message before the reply
        running = rng.random() < 0.1
        if running:
            await self.set_status(SessionStatus.RUNNING.value)
        if self.tools is not None and rng.random() < TOOL_TURNS:
            await self.tool_turn(self.tools)
        else:
            rounds = rng.choices((0, 1, 2), weights=(6, 3, 1))[0]
            for _ in range(rounds):
                await self.tool_round()
            await self.final()
        if running:
            await self.set_status(SessionStatus.ACTIVE.value)
        r = rng.random()
        if r < 0.04:
            await self.session.snapshot()
            self.acknowledge()
        elif r < 0.08:
            await self.session.flush()
            self.acknowledge()

    async def run(self) -> None:
        await self.resume()
        while True:
            await self.turn()


@dataclass
class ToolBench:
    """A real turn runner for the campaign's agent (offline model, ``bash``) and where the
    tools write their marker files."""

    runner: TurnRunner
    markers: Path


def markers_dir(sessions_dir: Path) -> Path:
    """Where the campaign's tools write their marker files (next to the sessions)."""
    return sessions_dir.parent / "tool-markers"


def tool_bench(registry: SessionRegistry, sessions_dir: Path) -> ToolBench:
    """The campaign agent's directory (created once) and a runner over ``registry``."""
    agents = sessions_dir.parent / "agents"
    (agents / AGENT).mkdir(parents=True, exist_ok=True)
    (agents / AGENT / "agent.yaml").write_text(AGENT_YAML, encoding="utf-8")
    markers = markers_dir(sessions_dir)
    markers.mkdir(parents=True, exist_ok=True)
    catalog = load_catalog(agents)
    runner = TurnRunner(
        registry,
        agents=lambda: catalog,
        providers=ProviderPool(),
        workspace_dir=sessions_dir.parent,
        world_memory_dir=sessions_dir.parent / "memory",
        policy_file=sessions_dir.parent / "policy.yaml",
    )
    return ToolBench(runner, markers)


async def _recover(registry: SessionRegistry, sids: list[str]) -> float:
    started = time.perf_counter()
    await registry.open()
    await asyncio.gather(*(registry.info(sid) for sid in sids))
    return (time.perf_counter() - started) * 1000


async def worker_main(args: argparse.Namespace) -> None:
    sessions_dir = Path(args.sessions_dir)
    ack_path = Path(args.ack_file)
    counters = PhaseCounters(Path(args.phase_file)) if args.phase_file else None
    if counters is not None:
        instrument(counters)
    book = read_book(read_records(ack_path))
    ack = AckLog(ack_path)
    ops: FileOps = OsFileOps()
    if args.tear_archive:
        ops = ArchiveTearingOps()
    elif args.script is None:
        ops = ShortWriteOps(args.seed)
    registry = SessionRegistry(
        SessionStore(sessions_dir, ops),
        RegistrySettings(idle_seconds=3600.0, ask_timeout=120.0),
    )
    print("RECOVERING", flush=True)
    if counters is not None:
        counters.add(PHASES.index("recovery"), 1)
    recovery_ms = await _recover(registry, list(book))
    if counters is not None:
        counters.add(PHASES.index("recovery"), -1)
    print(f"READY {recovery_ms:.3f} {len(book)}", flush=True)

    rng = random.Random(args.seed)
    if args.script is not None:
        await run_script(registry, ack, book, json.loads(args.script))
        print("DONE", flush=True)
        await asyncio.Event().wait()
        return

    wanted = max(args.sessions, len(book) + (1 if rng.random() < 0.1 else 0))
    while len(book) < min(wanted, args.max_sessions):
        sid = await registry.create(NewSession(agent=AGENT, message_limit=MESSAGE_LIMIT))
        ack.write({"kind": "session", "sid": sid})
        book[sid] = SessionBook()
    tools = tool_bench(registry, sessions_dir)
    drivers = [
        Driver(registry, ack, sid, entry, random.Random(f"{args.seed}/{sid}"), RUN_ID, tools)
        for sid, entry in book.items()
    ]
    await asyncio.gather(*(d.run() for d in drivers))


async def run_script(
    registry: SessionRegistry, ack: AckLog, book: dict[str, SessionBook], ops: list[list[Any]]
) -> None:
    """A fixed conversation on the last session (or a new one): ["create"], ["user", pid],
    ["final"], ["tools", [call ids]], ["result", call id], ["flush"], ["snapshot"]."""
    driver: Driver | None = None
    if book:
        sid = list(book)[-1]
        driver = Driver(registry, ack, sid, book[sid], random.Random(sid), RUN_ID)
    for op, *rest in ops:
        if op == "create":
            sid = await registry.create(NewSession(agent=AGENT, message_limit=MESSAGE_LIMIT))
            ack.write({"kind": "session", "sid": sid})
            book[sid] = SessionBook()
            driver = Driver(registry, ack, sid, book[sid], random.Random(sid), RUN_ID)
            continue
        assert driver is not None, "script needs a session"
        if op == "user":
            await driver.user(f"{driver.sid}:{rest[0]}", redelivered=len(rest) > 1)
        elif op == "final":
            await driver.final()
        elif op == "tools":
            calls = tuple(ToolCall(id=c, name="search", arguments='{"q": 1}') for c in rest[0])
            seq = await driver.session.add_assistant_response("", tool_calls=calls)
            call_ids = list(rest[0])
            record = {"kind": "tool_call", "sid": driver.sid, "seq": seq, "call_ids": call_ids}
            driver.unflushed.append({**record, "sha": content_sha("")})
        elif op == "result":
            text = make_text(driver.rng, driver.tag("result"), 40)
            seq = await driver.session.add_tool_result(rest[0], True, text)
            record = {"kind": "tool_result", "sid": driver.sid, "seq": seq, "call_id": rest[0]}
            driver.unflushed.append({**record, "sha": content_sha(text)})
        elif op == "flush":
            await driver.session.flush()
            driver.acknowledge()
        elif op == "snapshot":
            await driver.session.snapshot()
            driver.acknowledge()
        else:
            raise ValueError(f"unknown script op {op!r}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions_dir")
    parser.add_argument("ack_file")
    parser.add_argument("seed", type=int)
    parser.add_argument("--sessions", type=int, default=5, help="sessions to drive at least")
    parser.add_argument("--max-sessions", type=int, default=10)
    parser.add_argument("--phase-file", default=None)
    parser.add_argument("--script", default=None, help="JSON list of ops instead of a campaign")
    parser.add_argument("--tear-archive", action="store_true", help="die in the 1st archive write")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(worker_main(args))


# --------------------------------------------------------------------------------------------
# The parent side: start, stop and kill workers
# --------------------------------------------------------------------------------------------


class WorkerFailedError(AssertionError):
    """The worker exited on its own, or never got ready."""


class Worker:
    """One worker child process; always killed and reaped on exit from the ``with`` block."""

    def __init__(
        self,
        sessions_dir: Path,
        ack_file: Path,
        seed: int,
        *,
        sessions: int = 5,
        phase_file: Path | None = None,
        script: list[list[Any]] | None = None,
        stderr_path: Path | None = None,
        tear_archive: bool = False,
    ) -> None:
        cmd = [sys.executable, str(WORKER_PATH), str(sessions_dir), str(ack_file), str(seed)]
        cmd += ["--sessions", str(sessions)]
        if phase_file is not None:
            cmd += ["--phase-file", str(phase_file)]
        if script is not None:
            cmd += ["--script", json.dumps(script)]
        if tear_archive:
            cmd.append("--tear-archive")
        self.cmd = cmd
        self.phase_file = phase_file
        self.stderr_path = stderr_path or Path(f"{ack_file}.stderr")
        self.proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def __enter__(self) -> Worker:
        with self.stderr_path.open("ab") as err:
            self.proc = subprocess.Popen(
                self.cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL
            )
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
        if proc.stdout is not None:
            proc.stdout.close()

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-limit:]
        except OSError:
            return ""

    def wait_for(self, prefix: str, timeout: float = 120.0) -> str:
        """The next stdout line starting with ``prefix``; WorkerFailedError if none comes."""
        assert self.proc is not None
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        want = prefix.encode()
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if line.startswith(want):
                    return line.decode()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerFailedError(f"worker printed no {prefix!r} in {timeout}s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.proc.wait(timeout=120)
                    raise WorkerFailedError(
                        f"worker exited with {code} before {prefix!r}:\n{self.stderr_tail()}"
                    )
                self._buffer += chunk

    def wait_exit(self, timeout: float = 120.0) -> int:
        """Wait for the worker to end by itself; its exit status (negative: a signal)."""
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def kill(self, *, probe: bool = False) -> list[str]:
        """SIGKILL the worker (after a SIGSTOP to read its phases when ``probe``)."""
        proc = self.proc
        assert proc is not None
        if proc.poll() is not None:
            raise WorkerFailedError(
                f"worker exited with {proc.returncode} by itself:\n{self.stderr_tail()}"
            )
        phases: list[str] = []
        if probe and self.phase_file is not None:
            os.kill(proc.pid, signal.SIGSTOP)
            _wait_stopped(proc.pid)
            phases = read_phases(self.phase_file)
        os.kill(proc.pid, signal.SIGKILL)
        code = proc.wait(timeout=120)
        if code != -signal.SIGKILL:
            raise WorkerFailedError(f"worker exited with {code}:\n{self.stderr_tail()}")
        return phases


def live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that still run (a zombie waiting to be reaped is dead)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def wait_until_gone(pgid: int, timeout: float = 60.0) -> list[int]:
    """Wait for group ``pgid`` to have no running process; what still runs at the deadline."""
    deadline = time.monotonic() + timeout
    while (alive := live_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


def check_tool_groups(markers: Path, checked: set[str]) -> list[str]:
    """After a kill: every tool group started so far (marker holds its pgid) must be gone.

    Survivors are reported and then killed: the check must not leave processes behind.
    """
    survivors = []
    names = sorted(p.name for p in markers.iterdir()) if markers.is_dir() else []
    for name in names:
        if name in checked:
            continue
        checked.add(name)
        text = (markers / name).read_text().strip()
        if not text.isdigit():
            continue  # killed between creating the file and writing the pid into it
        pgid = int(text)
        alive = wait_until_gone(pgid)
        if alive:
            survivors.append(f"tool {name}: processes {alive} of group {pgid} outlived the kill")
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
    return survivors


def _wait_stopped(pid: int, timeout: float = 60.0) -> None:
    """Wait until every thread of ``pid`` is stopped (so its phase counters are final)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            states = []
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/stat", encoding="ascii") as fh:
                    states.append(fh.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            return
        if all(s in ("T", "t") for s in states):
            return
        time.sleep(0.0005)


# --------------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """What the final check found (lost, duplicated and problems must all be empty)."""

    sessions: int = 0
    acknowledged: int = 0
    events: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unacked_sessions: int = 0
    torn_lines: int = 0
    tmp_files: int = 0
    interrupted_results: int = 0
    redeliveries: int = 0
    tools_started: int = 0
    tools_interrupted: int = 0
    tool_calls: dict[str, list[str]] = field(default_factory=dict)
    """Marker name → the results recorded for the call that names it (filled per session)."""

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.problems)

    def summary(self, limit: int = 15) -> str:
        lines = [*self.lost[:limit], *self.duplicated[:limit], *self.problems[:limit]]
        return "\n".join(lines)


def raw_scan(directory: Path) -> tuple[int, list[str]]:
    """Torn (unparseable) lines in the session's files, and seqs written twice differently."""
    torn = 0
    seen: dict[int, bytes] = {}
    conflicts: list[str] = []
    for name in ("events.archive.jsonl", "events.jsonl"):
        try:
            raw = (directory / name).read_bytes()
        except FileNotFoundError:
            continue
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                event = Event.from_json(line)
            except ValueError:
                torn += 1
                continue
            first = seen.setdefault(event.seq, line)
            if first != line:
                conflicts.append(f"{directory.name}: seq {event.seq} written twice differently")
    return torn, conflicts


def _payload_sha(event: Event) -> str:
    if event.type == EventType.TOOL_RESULT:
        return content_sha(str((event.data.get("result") or {}).get("content", "")))
    return content_sha(str(event.data.get("content") or ""))


def _is_final(event: Event) -> bool:
    return event.type == EventType.ASSISTANT_RESPONSE and not event.data.get("tool_calls")


async def verify(sessions_dir: Path, ack_file: Path) -> Verdict:
    """Open the registry (recovering every session) and check everything acknowledged."""
    verdict = Verdict()
    records = read_records(ack_file)
    by_sid: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_sid[r.get("sid", "")].append(r)
    acked_sids = [r["sid"] for r in records if r["kind"] == "session"]
    registry = SessionRegistry(SessionStore(sessions_dir), RegistrySettings(ask_timeout=120.0))
    await registry.open()
    try:
        for sid in acked_sids:
            verdict.sessions += 1
            await _verify_session(registry, sid, by_sid[sid], verdict)
        store = registry.store
        assert isinstance(store, SessionStore)  # the file backend: its folders are scanned
        for sid in store.list_ids():
            torn, conflicts = raw_scan(store.directory(sid))
            verdict.torn_lines += torn
            verdict.problems.extend(conflicts)
            verdict.tmp_files += sum(1 for _ in store.directory(sid).glob("*.tmp"))
            if sid in by_sid and any(r["kind"] == "session" for r in by_sid[sid]):
                continue
            verdict.unacked_sessions += 1  # created, but the kill came before the ack
            if store.exists(sid):
                try:
                    await registry.info(sid)
                except Exception as exc:
                    verdict.problems.append(f"{sid} (never acknowledged) does not load: {exc!r}")
        for sid in store.quarantined():
            verdict.problems.append(f"{sid} was quarantined")
    finally:
        await registry.aclose()
    _check_tools(markers_dir(sessions_dir), verdict)
    return verdict


def _marker_of(call: dict[str, Any]) -> str | None:
    """The marker file a campaign ``bash`` call writes first (``echo $$ > PATH; …``)."""
    arguments = call.get("arguments")
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if not isinstance(command, str) or " > " not in command:
        return None
    return Path(command.split(" > ", 1)[1].split(";", 1)[0]).name


def _check_tools(markers: Path, verdict: Verdict) -> None:
    """Every tool that started has its call on disk and exactly one result."""
    started = sorted(p.name for p in markers.iterdir()) if markers.is_dir() else []
    verdict.tools_started = len(started)
    for name in started:
        results = verdict.tool_calls.get(name)
        if results is None:
            verdict.lost.append(f"tool {name} ran, but no call for it is on disk")
        elif len(results) != 1:
            verdict.problems.append(f"tool {name} ran; its call has results {results}")
        elif results[0] == INTERRUPTED_RESULT:
            verdict.tools_interrupted += 1


async def _verify_session(
    registry: SessionRegistry, sid: str, records: list[dict[str, Any]], verdict: Verdict
) -> None:
    try:
        info = await registry.info(sid)
        session = registry.handle(sid)
        history: list[Event] = await session.events(after_seq=0, include_archive=True)
        window = await session.messages()
    except Exception as exc:
        verdict.problems.append(f"{sid} does not load: {exc!r}")
        return
    verdict.events += len(history)
    by_seq = {e.seq: e for e in history}
    seqs = [e.seq for e in history]
    if seqs != list(range(1, len(seqs) + 1)):
        verdict.problems.append(f"{sid}: seqs not contiguous from 1: {_describe_gaps(seqs)}")
    if info.last_seq != (seqs[-1] if seqs else 0):
        verdict.problems.append(f"{sid}: last_seq {info.last_seq} but log ends at {seqs[-1:]}")

    # Every acknowledged event is there with its content.
    pid_seq: dict[str, list[int]] = defaultdict(list)
    for e in history:
        if e.type == EventType.USER_MESSAGE and e.data.get("platform_message_id"):
            pid_seq[str(e.data["platform_message_id"])].append(e.seq)
    expected_type = {
        "user": EventType.USER_MESSAGE,
        "final": EventType.ASSISTANT_RESPONSE,
        "tool_call": EventType.ASSISTANT_RESPONSE,
        "tool_result": EventType.TOOL_RESULT,
        "status": EventType.STATUS_CHANGE,
    }
    for r in records:
        kind = r["kind"]
        if kind not in expected_type:
            continue
        if kind == "user" and r.get("dup"):
            verdict.redeliveries += 1
            _check_redelivery(sid, r, pid_seq, history, verdict)
            continue
        verdict.acknowledged += 1
        event = by_seq.get(r["seq"])
        label = f"{sid} seq {r['seq']} ({kind})"
        if event is None or event.type != expected_type[kind]:
            verdict.lost.append(f"{label}: missing, found {event and event.type}")
        elif kind == "status":
            if event.data.get("to") != r["status"]:
                verdict.lost.append(f"{label}: status {event.data.get('to')} != {r['status']}")
        elif _payload_sha(event) != r["sha"]:
            verdict.lost.append(f"{label}: content differs")
        elif kind == "user" and event.data.get("platform_message_id") != r["pid"]:
            verdict.lost.append(f"{label}: platform id differs")
        elif kind == "tool_call":
            ids = [c.get("call_id") for c in event.data.get("tool_calls") or []]
            if ids != r["call_ids"]:
                verdict.lost.append(f"{label}: call ids differ")
        elif kind == "tool_result" and event.data.get("call_id") != r["call_id"]:
            verdict.lost.append(f"{label}: call id differs")

    # Nothing twice: platform ids, tagged contents, tool results per call.
    for pid, found in pid_seq.items():
        if len(found) > 1:
            verdict.duplicated.append(f"{sid}: platform id {pid} at seqs {found}")
    contents: Counter[tuple[str, str]] = Counter()
    results: dict[str, list[int]] = defaultdict(list)
    calls: dict[str, int] = {}
    for e in history:
        if e.type == EventType.TOOL_RESULT:
            results[str(e.data.get("call_id"))].append(e.seq)
            content = str((e.data.get("result") or {}).get("content", ""))
            if content == INTERRUPTED_RESULT:
                verdict.interrupted_results += 1
                continue
        elif e.type == EventType.ASSISTANT_RESPONSE:
            for c in e.data.get("tool_calls") or []:
                calls[str(c.get("call_id"))] = e.seq
            if str(e.data.get("content") or "").startswith("[offline model] Calling"):
                continue  # the offline model's fixed words before a call
        elif e.type != EventType.USER_MESSAGE:
            continue
        if _payload_sha(e) != content_sha(""):
            contents[(e.type, _payload_sha(e))] += 1
    for (kind, sha), count in contents.items():
        if count > 1:
            verdict.duplicated.append(f"{sid}: {kind} content {sha} recorded {count} times")
    for call_id, call_seq in calls.items():
        found = results.get(call_id, [])
        if len(found) != 1 or found[0] < call_seq:
            verdict.problems.append(f"{sid}: call {call_id} (seq {call_seq}) results at {found}")
    for call_id in results.keys() - calls.keys():
        verdict.problems.append(f"{sid}: result for unknown call {call_id}")
    texts = {
        str(e.data.get("call_id")): str((e.data.get("result") or {}).get("content", ""))
        for e in history
        if e.type == EventType.TOOL_RESULT
    }
    for e in history:
        for c in e.data.get("tool_calls") or [] if e.type == EventType.ASSISTANT_RESPONSE else []:
            marker = _marker_of(c)
            if marker is not None:
                call_id = str(c.get("call_id"))
                found = results.get(call_id, [])
                verdict.tool_calls[marker] = [texts[call_id]] * len(found) if found else []

    # Status: consistent with the log, never left running after recovery.
    changes = [e for e in history if e.type == EventType.STATUS_CHANGE]
    logged = str(changes[-1].data.get("to")) if changes else SessionStatus.ACTIVE.value
    if info.status.value != logged or info.status is SessionStatus.RUNNING:
        verdict.problems.append(f"{sid}: status {info.status.value}, log says {logged}")

    # Layer 1: the window is the tail of the history (after what a summary replaced), calls
    # paired with their results.
    summarised = max(
        (int(e.data.get("through_seq") or 0) for e in history if e.type == EventType.SUMMARY),
        default=0,
    )
    said = [
        (Role.USER if e.type == EventType.USER_MESSAGE else Role.ASSISTANT, _payload_sha(e))
        for e in history
        if e.type in (EventType.USER_MESSAGE, EventType.ASSISTANT_RESPONSE) and e.seq > summarised
    ]
    shown = [(m.role, content_sha(m.content)) for m in window if m.role is not Role.TOOL]
    tail = said[-len(shown) :] if shown else []
    if shown != tail or len(shown) < min(len(said), 20):
        verdict.problems.append(
            f"{sid}: window ({len(shown)} messages) is not the tail of the history ({len(said)})"
        )
    open_calls: set[str] = set()
    for m in window:
        open_calls.update(c.id for c in m.tool_calls)
        if m.role is Role.TOOL and m.tool_call_id not in open_calls:
            verdict.problems.append(f"{sid}: window has a result without its call")
    window_results = [str(m.tool_call_id) for m in window if m.role is Role.TOOL]
    if sorted(window_results) != sorted(open_calls) or len(set(window_results)) != len(
        window_results
    ):
        verdict.problems.append(f"{sid}: window calls and results do not pair up")


def _check_redelivery(
    sid: str,
    record: dict[str, Any],
    pid_seq: dict[str, list[int]],
    history: list[Event],
    verdict: Verdict,
) -> None:
    pid = record["pid"]
    found = pid_seq.get(pid, [])
    if len(found) != 1:
        verdict.lost.append(f"{sid}: redelivered {pid} reported duplicate, found at {found}")
        return
    original = found[0]
    if record["seq"] not in (0, original):
        verdict.problems.append(f"{sid}: redelivered {pid} -> seq {record['seq']} != {original}")
    before = record.get("before")
    if before is not None:
        answered = any(original < e.seq <= before and _is_final(e) for e in history)
        if record["answered"] != answered:
            verdict.problems.append(
                f"{sid}: redelivered {pid} (seq {original}) reported answered="
                f"{record['answered']}, but a final reply was {'' if answered else 'not '}recorded"
            )


def _describe_gaps(seqs: list[int]) -> str:
    dupes = [s for s, n in Counter(seqs).items() if n > 1]
    missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
    return f"missing {missing[:10]}, duplicated {dupes[:10]}"


# --------------------------------------------------------------------------------------------
# The campaign
# --------------------------------------------------------------------------------------------


@dataclass
class CampaignResult:
    """Numbers of a kill/restart campaign plus the final verdict."""

    cycles: int = 0
    kills: int = 0
    kill_phases: Counter[str] = field(default_factory=Counter)
    recovery_ms: list[float] = field(default_factory=list)
    logged_errors: list[str] = field(default_factory=list)
    tool_survivors: list[str] = field(default_factory=list)
    torn_tail_warnings: int = 0
    seconds: float = 0.0
    verdict: Verdict = field(default_factory=Verdict)

    @property
    def ok(self) -> bool:
        return self.verdict.ok and not self.logged_errors and not self.tool_survivors

    def recovery_quantiles(self) -> tuple[float, float]:
        """p50 and p99 of the restarts' recovery times, in ms."""
        values = sorted(self.recovery_ms)
        if not values:
            return (0.0, 0.0)
        if len(values) == 1:
            return (values[0], values[0])
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        return (statistics.median(values), cuts[98])


def run_campaign(
    workdir: Path,
    *,
    cycles: int,
    seed: int = 1,
    sessions: int = 5,
    min_delay: float = 0.01,
    max_delay: float = 0.3,
    recovery_kills: float = 0.1,
    probes: float = 0.5,
    progress: Any = None,
) -> CampaignResult:
    """Start, kill (SIGKILL at a random moment) and restart a worker ``cycles`` times, then
    check everything acknowledged in-process. Every child is reaped, whatever happens."""
    result = CampaignResult()
    sessions_dir = workdir / "sessions"
    ack_file = workdir / "acks.jsonl"
    phase_file = workdir / "phases.bin"
    stderr_path = workdir / "worker-stderr.log"
    rng = random.Random(seed)
    checked: set[str] = set()
    started = time.perf_counter()
    for cycle in range(cycles):
        with stderr_path.open("ab") as err:
            err.write(f"=== cycle {cycle}\n".encode())
        worker = Worker(
            sessions_dir,
            ack_file,
            seed * 100_003 + cycle,
            sessions=sessions,
            phase_file=phase_file,
            stderr_path=stderr_path,
        )
        with worker:
            probe = rng.random() < probes
            if cycle and rng.random() < recovery_kills:
                worker.wait_for("RECOVERING")
                time.sleep(rng.uniform(0.0, 0.03))
            else:
                ready = worker.wait_for("READY").split()
                if cycle:
                    result.recovery_ms.append(float(ready[1]))
                time.sleep(rng.uniform(min_delay, max_delay))
            phases = worker.kill(probe=probe)
        result.tool_survivors += check_tool_groups(markers_dir(sessions_dir), checked)
        result.cycles += 1
        result.kills += 1
        if probe:
            result.kill_phases.update(phases or ["between steps"])
        else:
            result.kill_phases["not probed"] += 1
        if progress is not None:
            progress(cycle, result)
    result.verdict = asyncio.run(verify(sessions_dir, ack_file))
    result.seconds = time.perf_counter() - started
    log_text = stderr_path.read_text(encoding="utf-8", errors="replace")
    for line in log_text.splitlines():
        if line.startswith(("ERROR", "CRITICAL", "Traceback")):
            result.logged_errors.append(line)
        elif "torn tail True" in line:
            result.torn_tail_warnings += 1
    return result


if __name__ == "__main__":
    main()
