"""HTTP front-end latency: synchronous turns, streaming time-to-first-token, HTTP overhead.

Prints one table. The server is a real ``duragent serve`` in a child process (``python -m
duragent serve -c <ws>/duragent.yaml --port <free>``, used once /readyz answers), on a
workspace in a temporary directory under the working directory, whose agent uses the offline
model (``provider: offline``, ``name: duragent-offline``: instant, no network). So a turn is
"persist the user message, fit the request, the offline reply, persist the reply": the numbers
are the front end plus the durable session, not a model. This process is the load generator.

    .venv/bin/python bench/http_api.py                # full run (about two minutes)
    .venv/bin/python bench/http_api.py --quick        # fewer requests, for a smoke check
    .venv/bin/python bench/http_api.py --shared-pool  # all clients share one httpx pool

(Not ``bench/http.py``: a script's folder comes first on sys.path, so a file named http.py
there would shadow the standard library's ``http`` package for every script in bench/.)

Clients: each simulated client is its own ``httpx.AsyncClient`` (its own keep-alive
connection), like independent users. ``--shared-pool`` runs them all through one
``httpx.AsyncClient`` with ``httpx.Limits(max_connections=300, max_keepalive_connections=300)``
instead; at 200 clients httpcore's pool then costs the load generator ~20 ms of CPU per
request (``ConnectionPool._assign_requests_to_connections`` scans every connection for every
queued request), so that mode measures httpx more than duragent. The CPU rows say where the
time went (server: the child's utime+stime; load generator: this process's); on a 2-core
machine both share the cores, so at 200 clients latency is mostly queueing.

(a) p50 / p99 latency of ``POST /api/v1/sessions/{id}/messages`` (a whole turn) at 1 and 200
    concurrent clients; each client has its own session and sends a fixed number of requests
    one after the other (after one unmeasured warm-up turn per session).
(b) p50 / p99 time-to-first-token of ``POST /api/v1/sessions/{id}/stream``: from sending the
    request to the first ``event: token`` line; the rest of the stream is read to its end
    (``event: done``) so every turn completes. Same clients and sessions as (a).
(c) HTTP overhead: median (a) latency at 1 client over the median time of the same turn run
    in-process (``runtime.turns.run(session_id, content)``) on a Runtime of its own (separate
    workspace, started in this process after the child server stopped).

Errors (non-2xx answers, exceptions, streams without ``done``) are counted; target 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import ssl
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import httpx

from duragent.config import load_workspace
from duragent.runtime import Runtime

ROWS: list[tuple[str, str, str, str]] = []

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
  description: HTTP benchmark bot (offline model)
spec:
  model:
    provider: offline
    name: duragent-offline
  session:
    on_disconnect: pause
"""

CONFIG = """\
server:
  host: 127.0.0.1
  request_timeout_seconds: 120
sessions:
  max_live_actors: 1000
"""

QUESTION = "How do I rotate a log file every day and keep a week of them? (request {i})"

LIMITS = httpx.Limits(max_connections=300, max_keepalive_connections=300)


def row(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
    verdict = "" if ok is None else ("ok" if ok else "MISSED")
    ROWS.append((name, value, target, verdict))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def write_workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "duragent.yaml").write_text(CONFIG)
    agent = root / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(AGENT)
    return root / "duragent.yaml"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


class Errors:
    """Failures by kind (status code, exception name, missing ``done``)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.first: dict[str, str] = {}

    def add(self, kind: str, detail: str) -> None:
        self.kinds[kind] += 1
        self.first.setdefault(kind, detail[:300])

    @property
    def total(self) -> int:
        return sum(self.kinds.values())

    def describe(self) -> str:
        return ", ".join(f"{k} x{n}" for k, n in self.kinds.most_common()) or "none"


# --- the server in a child process -----------------------------------------------------------


class ChildServer:
    """``python -m duragent serve`` on a free port; output goes to ``log``."""

    def __init__(self, config: Path, log: IO[bytes]) -> None:
        self.config = config
        self.log = log
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, wait_seconds: float = 60.0) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "duragent",
            "serve",
            "-c",
            str(self.config),
            "--port",
            str(self.port),
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + wait_seconds
        async with httpx.AsyncClient(base_url=self.base_url, timeout=2) as probe:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await probe.get("/readyz")).status_code == 200:
                        return
                await asyncio.sleep(0.1)
        raise RuntimeError(f"server not ready after {wait_seconds:.0f} s")

    async def stop(self) -> int | None:
        if self.proc is None or self.proc.returncode is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()  # SIGTERM: graceful stop (sessions flushed)
        try:
            return await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()


# --- load ------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def clients_for(
    base_url: str, sessions: list[str], shared: httpx.AsyncClient | None
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """The HTTP client of each session's simulated user (``shared`` for all, if given)."""
    if shared is not None:
        yield dict.fromkeys(sessions, shared)
        return
    tls = ssl.create_default_context()  # unused on http://, but built once, not per client
    async with contextlib.AsyncExitStack() as stack:
        own = {}
        for sid in sessions:
            client = httpx.AsyncClient(base_url=base_url, timeout=120, verify=tls)
            own[sid] = await stack.enter_async_context(client)
        yield own


async def create_sessions(http: httpx.AsyncClient, n: int) -> list[str]:
    async def one() -> str:
        r = await http.post("/api/v1/sessions", json={"agent": "bot"})
        r.raise_for_status()
        return str(r.json()["session_id"])

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def sync_turn(http: httpx.AsyncClient, sid: str, i: int, errors: Errors) -> float | None:
    """Latency of one synchronous turn, or None when it failed."""
    start = time.perf_counter()
    try:
        r = await http.post(
            f"/api/v1/sessions/{sid}/messages", json={"content": QUESTION.format(i=i)}
        )
    except httpx.HTTPError as exc:
        errors.add(type(exc).__name__, repr(exc))
        return None
    elapsed = time.perf_counter() - start
    if r.status_code != 200:
        errors.add(f"HTTP {r.status_code}", r.text)
        return None
    return elapsed


async def stream_turn(
    http: httpx.AsyncClient, sid: str, i: int, errors: Errors
) -> tuple[float, float] | None:
    """(time to first token, time to the end of the stream), or None when it failed."""
    start = time.perf_counter()
    first: float | None = None
    done = False
    try:
        async with http.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": QUESTION.format(i=i)}
        ) as r:
            if r.status_code != 200:
                await r.aread()
                errors.add(f"HTTP {r.status_code}", r.text)
                return None
            event = ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                    if event == "token" and first is None:
                        first = time.perf_counter() - start
                    elif event == "done":
                        done = True
                elif line.startswith("data:") and event == "error":
                    errors.add("event: error", line)
                    return None
    except httpx.HTTPError as exc:
        errors.add(type(exc).__name__, repr(exc))
        return None
    total = time.perf_counter() - start
    if first is None or not done:
        errors.add("stream without token/done", f"first={first} done={done}")
        return None
    return first, total


Result = float | tuple[float, float]


async def run_clients(
    sessions: list[str], per_client: int, turn: Callable[[str, int], Awaitable[Result | None]]
) -> tuple[list[Result], float]:
    """Every client sends ``per_client`` turns one after the other; (results, wall seconds)."""
    results: list[Result] = []

    async def client(sid: str) -> None:
        for i in range(per_client):
            value = await turn(sid, i)
            if value is not None:
                results.append(value)

    start = time.perf_counter()
    await asyncio.gather(*(client(s) for s in sessions))
    return results, time.perf_counter() - start


async def bench_level(
    server: ChildServer,
    admin: httpx.AsyncClient,
    clients: int,
    per_client: int,
    shared_pool: bool,
    errs: Errors,
) -> float | None:
    """(a) and (b) at one concurrency level; returns the median sync latency."""
    label = f"{clients} client{'s' if clients > 1 else ''}"
    sessions = await create_sessions(admin, clients)
    async with clients_for(server.base_url, sessions, admin if shared_pool else None) as http:
        # Warm-up: one turn per session (actor started, first turn's one-off costs paid).
        await asyncio.gather(*(sync_turn(http[s], s, -1, errs) for s in sessions))

        async def sync(sid: str, i: int) -> float | None:
            return await sync_turn(http[sid], sid, i, errs)

        async def stream(sid: str, i: int) -> tuple[float, float] | None:
            return await stream_turn(http[sid], sid, i, errs)

        cpu0, server0 = own_cpu_seconds(), cpu_seconds(server.pid)
        done, wall = await run_clients(sessions, per_client, sync)
        cpu1, server1 = own_cpu_seconds(), cpu_seconds(server.pid)
        lat = [v for v in done if isinstance(v, float)]
        median = statistics.median(lat) if lat else None
        if lat:
            row(f"(a) sync turn p50, {label}", ms(pct(lat, 0.5)))
            row(f"(a) sync turn p99, {label}", ms(pct(lat, 0.99)))
            row(f"(a) sync turns/s, {label}", f"{len(lat) / wall:,.0f}/s")
            row(
                f"(a) CPU per turn server / load gen, {label}",
                f"{(server1 - server0) / len(lat) * 1e3:.1f} / "
                f"{(cpu1 - cpu0) / len(lat) * 1e3:.1f} ms",
            )

        cpu0, server0 = own_cpu_seconds(), cpu_seconds(server.pid)
        done, wall = await run_clients(sessions, per_client, stream)
        cpu1, server1 = own_cpu_seconds(), cpu_seconds(server.pid)
        pairs = [v for v in done if isinstance(v, tuple)]
        if pairs:
            ttft = [p[0] for p in pairs]
            whole = [p[1] for p in pairs]
            row(f"(b) stream first token p50, {label}", ms(pct(ttft, 0.5)))
            row(f"(b) stream first token p99, {label}", ms(pct(ttft, 0.99)))
            row(f"(b) stream whole turn p50, {label}", ms(pct(whole, 0.5)))
            row(
                f"(b) CPU per turn server / load gen, {label}",
                f"{(server1 - server0) / len(pairs) * 1e3:.1f} / "
                f"{(cpu1 - cpu0) / len(pairs) * 1e3:.1f} ms",
            )
    row(
        f"(a+b) errors, {label} ({2 * clients * per_client:,} requests)",
        errs.describe(),
        "0",
        errs.total == 0,
    )
    return median


async def in_process_turn(root: Path, n: int) -> float:
    """(c) the median time of ``runtime.turns.run`` on a Runtime of its own."""
    runtime = Runtime(load_workspace(write_workspace(root).parent), port=0)
    await runtime.start()
    try:
        sid = await runtime.turns.start_session("bot")
        for i in range(5):  # warm-up
            await runtime.turns.run(sid, QUESTION.format(i=-1 - i))
        times: list[float] = []
        for i in range(n):
            start = time.perf_counter()
            result = await runtime.turns.run(sid, QUESTION.format(i=i))
            times.append(time.perf_counter() - start)
            assert result.status == "complete", result
        return statistics.median(times)
    finally:
        await runtime.aclose()


async def main(quick: bool, shared_pool: bool) -> None:
    logging.getLogger("duragent").setLevel(logging.ERROR)  # the offline model's warning
    levels = [(1, 30), (200, 3)] if quick else [(1, 300), (200, 20)]
    errors: dict[int, Errors] = {}
    median_http: float | None = None
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        base = Path(tmp)
        config = write_workspace(base / "served")
        with (base / "server.log").open("wb") as log:
            server = ChildServer(config, log)
            await server.start()
            try:
                async with httpx.AsyncClient(
                    base_url=server.base_url, limits=LIMITS, timeout=120
                ) as admin:
                    for clients, per_client in levels:
                        errs = errors.setdefault(clients, Errors())
                        median = await bench_level(
                            server, admin, clients, per_client, shared_pool, errs
                        )
                        if clients == 1:
                            median_http = median
            finally:
                code = await server.stop()
        server_log = (base / "server.log").read_text(errors="replace")
        median_local = await in_process_turn(base / "local", 30 if quick else 300)
    row("(c) in-process turn (runtime.turns.run), median", ms(median_local))
    if median_http is not None:
        row("(c) sync turn over HTTP, 1 client, median", ms(median_http))
        row("(c) HTTP overhead ratio (HTTP / in-process)", f"{median_http / median_local:.2f}x")
    row("server exit code after SIGTERM", str(code), "0", code == 0)

    width = max(len(r[0]) for r in ROWS)
    print(f"{'measure':<{width}}  {'value':>22}  {'target':>6}  verdict")
    print("-" * (width + 42))
    for name, value, target, verdict in ROWS:
        print(f"{name:<{width}}  {value:>22}  {target:>6}  {verdict}")
    for clients, errs in errors.items():
        for kind, detail in errs.first.items():
            print(f"first {kind} at {clients} clients: {detail}")
    problems = [
        line
        for line in server_log.splitlines()
        if "Traceback" in line or " ERROR " in line or " CRITICAL " in line
    ]
    if problems:
        print(f"server log: {len(problems)} error lines, first: {problems[0][:300]}")
    mode = "shared httpx pool" if shared_pool else "one httpx client per simulated client"
    print(json.dumps({"machine_cores": os.cpu_count(), "quick": quick, "clients": mode}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--shared-pool", action="store_true", help="all clients share one httpx.AsyncClient"
    )
    args = parser.parse_args()
    asyncio.run(main(args.quick, args.shared_pool))
