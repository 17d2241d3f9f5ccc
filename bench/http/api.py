"""HTTP turns: the offline model, the provider path over HTTP, long chats, cold start.

Prints one table. The server is a real ``duragent serve`` in a child process (``python -m
duragent serve -c <ws>/duragent.yaml --port <free>``, used once /readyz answers), on a
workspace in a temporary directory under the working directory. Sections (a)–(c) use the
offline model (``provider: offline``: instant, no network), so a turn is "persist the user
message, fit the request, the offline reply, persist the reply": the front end plus the
durable session. Sections (d)–(g) (``providers.py``) put the official SDKs and a model
server over HTTP in the path, as every real deployment has them. This process is the load
generator.

    .venv/bin/python -m bench.http.api                # everything (about ten minutes)
    .venv/bin/python -m bench.http.api --quick        # fewer requests, for a smoke check
    .venv/bin/python -m bench.http.api --only offline # (a)–(c) only
    .venv/bin/python -m bench.http.api --only providers --providers openai
    .venv/bin/python -m bench.http.api --only openai   # (h)–(i) only
    .venv/bin/python -m bench.http.api --only metrics  # (j) only
    .venv/bin/python -m bench.http.api --shared-pool  # (a)–(c) clients share one httpx pool

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

(d)–(g): see ``providers.py``: fresh turns over the provider path, 1 / 100 / 1,000
sessions at once, turns in chats of 1 to 2,000 messages, and the first reply after spawning.

(h)–(i): see ``openai_api.py``: the OpenAI-compatible API (httpx and the ``openai`` SDK,
plain and streamed, against the native endpoint) and the cost of ``--log-format json``.

(j): see ``metrics.py``: metrics, JSON logging and both against both off, as ratios of
turns taken round-robin on four servers in one run (target for both: ≤ 5 %).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.http.metrics import metrics_cost
from bench.http.openai_api import openai_sections
from bench.http.providers import provider_sections
from bench.http.rig import (
    LIMITS,
    QUESTION,
    ChildServer,
    Errors,
    clients_for,
    create_sessions,
    ms,
    own_cpu_seconds,
    run_clients,
    stream_turn,
    sync_turn,
    write_workspace,
)
from bench.rigs.process import cpu_seconds
from bench.rigs.table import pct, print_rows, row
from duragent.config import load_workspace
from duragent.runtime import Runtime


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


async def offline_sections(base: Path, quick: bool, shared_pool: bool) -> None:
    """(a)–(c): the offline model at 1 and 200 clients, and HTTP's share of a turn."""
    levels = [(1, 30), (200, 3)] if quick else [(1, 300), (200, 20)]
    errors: dict[int, Errors] = {}
    median_http: float | None = None
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
    median_local = await in_process_turn(base / "local", 30 if quick else 300)
    row("(c) in-process turn (runtime.turns.run), median", ms(median_local))
    if median_http is not None:
        row("(c) sync turn over HTTP, 1 client, median", ms(median_http))
        row("(c) HTTP overhead ratio (HTTP / in-process)", f"{median_http / median_local:.2f}x")
    row("server exit code after SIGTERM", str(code), "0", code == 0)
    for clients, errs in errors.items():
        for kind, detail in errs.first.items():
            print(f"first {kind} at {clients} clients: {detail}")


def log_problems(base: Path) -> None:
    """Error lines the servers logged (a clean run has none)."""
    for log in sorted(base.glob("*.log")):
        problems = [
            line
            for line in log.read_text(errors="replace").splitlines()
            if "Traceback" in line or " ERROR " in line or " CRITICAL " in line
        ]
        if problems:
            print(f"{log.name}: {len(problems)} error lines, first: {problems[0][:300]}")


async def main(quick: bool, shared_pool: bool, only: str, providers: list[str]) -> None:
    logging.getLogger("duragent").setLevel(logging.ERROR)  # the offline model's warning
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        base = Path(tmp)
        if only in ("all", "offline"):
            await offline_sections(base, quick, shared_pool)
        if only in ("all", "providers"):
            await provider_sections(base, providers, quick)
        if only in ("all", "openai"):
            await openai_sections(base, quick)
        if only in ("all", "metrics"):
            await metrics_cost(base, quick)
        print_rows()
        log_problems(base)
    mode = "shared httpx pool" if shared_pool else "one httpx client per simulated client"
    print(json.dumps({"machine_cores": os.cpu_count(), "quick": quick, "clients": mode}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--shared-pool", action="store_true", help="(a)-(c) clients share one httpx.AsyncClient"
    )
    parser.add_argument(
        "--only", choices=["all", "offline", "providers", "openai", "metrics"], default="all"
    )
    parser.add_argument(
        "--providers",
        default="offline,openai,anthropic",
        help="comma-separated, for (d)-(g); offline is the CPU reference (default: all three)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.quick, args.shared_pool, args.only, args.providers.split(",")))
