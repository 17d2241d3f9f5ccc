"""``bench/http/api.py``'s provider sections: the real deployment path, long chats, cold start.

A ``duragent serve`` child talks through the official SDKs (OpenAI-compatible or Anthropic) to
``duragent.testing``'s scripted server in another process over HTTP (the instant model: a fixed
streamed reply). The offline model runs the same workload as the reference for CPU.

(d) fresh turns: sequential sync turns in short sessions (10 turns each): p50 (target ≤ 5 ms).
(e) load: S sessions × T turns at once, each session its own client: turns/s, p50, p99, and
    the server's CPU per turn (utime + stime of the child). At 100 sessions: ≥ 300 turns/s with
    p99 ≤ 1 s; the provider path may add ≤ 1 ms of CPU per model call over the offline model.
(f) long sessions: one session per history length (1, 10, 100, 1,000, 2,000 messages), seeded
    over HTTP, then measured turns taken round-robin (so a slow moment hits every length alike).
    "model" is the instant model's own time in those very turns, as the model server measured
    it (``/_fake/served``: from a request's headers to the last byte of its answer; receiving
    and parsing the history is the model's cost, not ours); "overhead" = turn − model, turn by
    turn. Target: 1,000 messages ≤ 1.2 × 10 messages. Beside it, the server's own CPU per
    turn (its threads' run time, ``schedstat``, around each turn: turns run one at a time).
(g) cold start: from spawning the server to the first reply of a new session (ready means ready:
    ``/readyz`` waits for the providers' warm-up). Target ≤ 1 s.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import httpx

from bench.http.rig import (
    LIMITS,
    ChildServer,
    Errors,
    FakeModel,
    agent_for,
    clients_for,
    create_sessions,
    ms,
    run_clients,
    sync_turn,
    write_workspace,
)
from bench.rigs.process import cpu_seconds, run_seconds
from bench.rigs.table import pct, row

ENV = {"ANTHROPIC_API_KEY": "bench-key"}
LONG_SIZES = (1, 10, 100, 1000, 2000)


async def fresh_turns(server: ChildServer, label: str, sessions: int, per: int) -> None:
    """(d) sequential turns in short sessions."""
    errs = Errors()
    times: list[float] = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        for sid in await create_sessions(http, sessions):
            await sync_turn(http, sid, -1, errs)  # the session's actor starts here
            for i in range(per):
                took = await sync_turn(http, sid, i, errs)
                if took is not None:
                    times.append(took)
    p50 = pct(times, 0.5)
    row(f"(d) {label}: fresh turn p50 (sequential)", ms(p50), "<= 5 ms", p50 <= 0.005)
    row(f"(d) {label}: fresh turn p99", ms(pct(times, 0.99)))
    if errs.total:
        row(f"(d) {label}: errors", errs.describe(), "0", False)


async def load(server: ChildServer, label: str, sessions: int, per: int) -> float:
    """(e) ``sessions`` clients at once; returns the server's CPU per turn (seconds)."""
    errs = Errors()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=120, limits=LIMITS) as admin:
        ids = await create_sessions(admin, sessions)
        async with clients_for(server.base_url, ids, None) as http:
            await asyncio.gather(*(sync_turn(http[s], s, -1, errs) for s in ids))

            async def one(sid: str, i: int) -> float | None:
                return await sync_turn(http[sid], sid, i, errs)

            cpu0 = cpu_seconds(server.pid)
            done, wall = await run_clients(ids, per, one)
            cpu = (cpu_seconds(server.pid) - cpu0) / max(1, len(done))
    lat = [v for v in done if isinstance(v, float)]
    rate = len(lat) / wall
    at = f"{sessions:,} session{'s' if sessions > 1 else ''}"
    target = sessions == 100 and label != "offline"
    row(
        f"(e) {label}: turns/s, {at}",
        f"{rate:,.0f}/s",
        ">= 300/s" if target else "",
        rate >= 300 if target else None,
    )
    row(
        f"(e) {label}: p50 / p99, {at}",
        f"{ms(pct(lat, 0.5))} / {ms(pct(lat, 0.99))}",
        "p99 <= 1 s" if target else "",
        pct(lat, 0.99) <= 1.0 if target else None,
    )
    row(f"(e) {label}: server CPU per turn, {at}", ms(cpu))
    if errs.total:
        row(f"(e) {label}: errors, {at}", errs.describe(), "0", False)
    return cpu


async def long_sessions(server: ChildServer, model: FakeModel, label: str, rounds: int) -> None:
    """(f) turns against history length; wall, model and overhead per size, and the ratios.

    After every measured turn the model server says how long it spent answering that turn's
    requests (``/_fake/served``, read outside the timed part): receiving and parsing a long
    history is its cost, and it grows with the chat whatever the client does. A turn's
    overhead is its wall time minus that, turn by turn.
    """
    errs = Errors()
    async with (
        httpx.AsyncClient(base_url=server.base_url, timeout=120) as http,
        httpx.AsyncClient(timeout=30) as probe,
    ):
        ids = dict(zip(LONG_SIZES, await create_sessions(http, len(LONG_SIZES)), strict=True))
        for size, sid in ids.items():  # a measured turn adds the size-th message
            for i in range((size - 1) // 2):
                await sync_turn(http, sid, i, errs)
        times: dict[int, list[float]] = {size: [] for size in LONG_SIZES}
        models: dict[int, list[float]] = {size: [] for size in LONG_SIZES}
        cpus: dict[int, list[float]] = {size: [] for size in LONG_SIZES}
        served = await model.served(probe)
        for r in range(rounds):
            for size, sid in ids.items():
                if size == 1:  # a fresh session every round: its turn has one message
                    sid = (await create_sessions(http, 1))[0]
                cpu = run_seconds(server.pid)
                took = await sync_turn(http, sid, 10_000 + r, errs)
                cpu = run_seconds(server.pid) - cpu
                before, served = served, await model.served(probe)
                if took is not None:
                    times[size].append(took)
                    models[size].append(served - before)
                    cpus[size].append(cpu)
    p50 = {size: statistics.median(t) for size, t in times.items() if t}
    model_p50 = {size: statistics.median(t) for size, t in models.items() if t}
    over = {
        size: statistics.median(t - m for t, m in zip(times[size], models[size], strict=True))
        for size in LONG_SIZES
        if times[size]
    }
    for size in LONG_SIZES:
        row(f"(f) {label}: turn with {size:,} messages, p50", ms(p50[size]))
    for size in (10, 1000):
        row(
            f"(f) {label}: {size:,} messages: model's own time / overhead",
            f"{ms(model_p50[size])} / {ms(over[size])}",
        )
    wall = p50[1000] / p50[10]
    row(f"(f) {label}: turn 1,000 / 10 messages (wall)", f"{wall:.2f}x")
    ratio = over[1000] / over[10]
    row(f"(f) {label}: overhead 1,000 / 10 messages", f"{ratio:.2f}x", "<= 1.2x", ratio <= 1.2)
    row(f"(f) {label}: overhead 2,000 / 10 messages", f"{over[2000] / over[10]:.2f}x")
    used = {size: statistics.median(c) for size, c in cpus.items() if c}
    spent = f"{ms(used[10])} / {ms(used[1000])}"
    row(f"(f) {label}: server CPU per turn, 10 / 1,000 messages", spent)
    row(f"(f) {label}: server CPU 1,000 / 10 messages", f"{used[1000] / used[10]:.2f}x")
    row(f"(f) {label}: turn 2,000 / 10 messages (wall)", f"{p50[2000] / p50[10]:.2f}x")
    if errs.total:
        row(f"(f) {label}: errors", errs.describe(), "0", False)


async def cold_start(config: Path, log_path: Path, label: str, runs: int) -> None:
    """(g) spawn → /readyz → new session → first reply, ``runs`` times; the median."""
    firsts, readies = [], []
    for _ in range(runs):
        with log_path.open("ab") as log:
            server = ChildServer(config, log, ENV)
            started = time.perf_counter()
            await server.start(wait_seconds=60, poll_seconds=0.01)
            readies.append(time.perf_counter() - started)
            async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
                sid = (await create_sessions(http, 1))[0]
                answer = await http.post(
                    f"/api/v1/sessions/{sid}/messages", json={"content": "hello"}
                )
                firsts.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
            await server.stop()
    first = statistics.median(firsts)
    row(f"(g) {label}: /readyz 200 after spawn, median", ms(statistics.median(readies)))
    row(f"(g) {label}: first reply after spawn, median", ms(first), "<= 1 s", first <= 1.0)


async def provider_sections(base: Path, providers: list[str], quick: bool) -> None:
    """Every provider section, one provider (and its own servers) at a time."""
    cpu: dict[str, float] = {}
    for label in providers:
        with (base / f"{label}.log").open("wb") as log:
            model = FakeModel(log)
            await model.start()
            try:
                config = write_workspace(base / label, agent_for(label, model.base_url))
                server = ChildServer(config, log, ENV)
                await server.start()
                try:
                    await fresh_turns(server, label, 5 if quick else 20, 10)
                    for sessions, per in ((1, 100), (100, 10), (1000, 2)):
                        if quick and sessions == 1000:
                            continue
                        spent = await load(server, label, sessions, per if not quick else 3)
                        if sessions == 100:
                            cpu[label] = spent
                    if label != "offline":
                        await long_sessions(server, model, label, 10 if quick else 40)
                finally:
                    await server.stop()
                await cold_start(config, base / f"{label}-cold.log", label, 1 if quick else 3)
            finally:
                await model.stop()
    for label, spent in cpu.items():
        if label != "offline" and "offline" in cpu:
            extra = spent - cpu["offline"]
            row(
                f"(e) {label}: CPU per model call over offline, 100 sessions",
                ms(extra),
                "<= 1 ms",
                extra <= 0.001,
            )
