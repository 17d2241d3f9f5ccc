"""``bench/http/api.py`` section (j): what metrics and JSON logging cost a turn, in one run.

Four ``duragent serve`` children at once, at the default log level (INFO), first on the
provider path (the ``openai`` SDK to the scripted model server in its own process, as in (d)
and (i): what a deployment runs), then on the offline model (no model call at all: the
turn is only the front end and the durable session, so a fixed cost weighs the most):

- ``off``: ``server.metrics: false`` and ``--log-format text`` (the reference point);
- ``metrics``: metrics on (the default), text logs;
- ``json``: metrics off, ``DURAGENT_LOG_FORMAT=json``;
- ``both``: metrics on and JSON logs (what the issue's target is about).

One client sends turns round-robin over the four, the order rotating each round, so a slow
moment of the shared machine hits every configuration alike. "cost" = the median, over
rounds, of (configuration / off) − 1 (target for ``both``: ≤ 5 %, issue #22). ``control`` is a
fifth server with both off: its "cost" is the noise floor of comparing two processes on a
shared machine. The server CPU per turn says what was paid for, and "recording one turn's
metrics" is the recording alone, in-process. Then the scrape: ``GET /metrics`` on the
``both`` server (median time and the exposition's size after the run).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.http.rig import (
    CONFIG,
    LIMITS,
    ChildServer,
    Errors,
    FakeModel,
    agent_for,
    create_sessions,
    ms,
    sync_turn,
    write_workspace,
)
from bench.rigs.process import cpu_seconds
from bench.rigs.table import row
from duragent.observability.metrics import Metrics

SETUPS = {  # name → (metrics on, log format)
    "off": (False, "text"),
    "control": (False, "text"),  # both off too: the noise floor of comparing two servers
    "metrics": (True, "text"),
    "json": (False, "json"),
    "both": (True, "json"),
}


def _workspace(root: Path, agent: str, metrics: bool) -> Path:
    config = write_workspace(root, agent)
    if not metrics:
        config.write_text(CONFIG.replace("server:\n", "server:\n  metrics: false\n", 1))
    return config


async def metrics_cost(base: Path, quick: bool) -> None:
    """(j) off / metrics / json / both, round-robin on four servers."""
    recording_cost()
    n = 60 if quick else 400
    with (base / "metrics-model.log").open("wb") as model_log:
        model = FakeModel(model_log)
        await model.start()
        try:
            await _rounds(base, "provider", agent_for("openai", model.base_url), n)
            await _rounds(base, "offline", agent_for("offline", None), n)
        finally:
            await model.stop()


async def _rounds(base: Path, path: str, agent: str, n: int) -> None:
    servers: dict[str, ChildServer] = {}
    logs = {name: (base / f"metrics-{path}-{name}.log").open("wb") for name in SETUPS}
    errs = Errors()
    times: dict[str, list[float]] = {name: [] for name in SETUPS}
    ratios: dict[str, list[float]] = {name: [] for name in SETUPS if name != "off"}
    try:
        with _same_cpu():
            for name, (metrics, fmt) in SETUPS.items():
                config = _workspace(base / f"metrics-{path}-{name}", agent, metrics)
                servers[name] = ChildServer(config, logs[name], env={"DURAGENT_LOG_FORMAT": fmt})
                await servers[name].start()
        clients = {
            name: httpx.AsyncClient(base_url=s.base_url, timeout=60, limits=LIMITS)
            for name, s in servers.items()
        }
        try:
            sids = {name: (await create_sessions(c, 1))[0] for name, c in clients.items()}
            for i in range(-5, 0):
                for name in SETUPS:
                    await sync_turn(clients[name], sids[name], i, errs)
            cpu0 = {name: cpu_seconds(s.pid) for name, s in servers.items()}
            names = list(SETUPS)
            for i in range(n):
                order = names[i % len(names) :] + names[: i % len(names)]
                took: dict[str, float] = {}
                for name in order:
                    t = await sync_turn(clients[name], sids[name], i, errs)
                    if t is not None:
                        times[name].append(t)
                        took[name] = t
                if "off" in took:
                    for name in ratios:
                        if name in took:
                            ratios[name].append(took[name] / took["off"])
            cpu = {name: (cpu_seconds(s.pid) - cpu0[name]) / n for name, s in servers.items()}
            scrape, size = await _scrape(clients["both"])
        finally:
            for c in clients.values():
                await c.aclose()
    finally:
        for s in servers.values():
            await s.stop()
        for log in logs.values():
            log.close()
    row(
        f"(j) {path}: sync turn p50 off / metrics / json / both",
        " / ".join(ms(statistics.median(times[name])) for name in SETUPS if name != "control"),
    )
    labels = {"control": "nothing (a 2nd server, both off)", "metrics": "metrics"}
    labels |= {"json": "JSON logging", "both": "both"}
    for name, label in labels.items():
        cost = statistics.median(ratios[name]) - 1
        target = name == "both"
        row(
            f"(j) {path}: cost of {label} on a turn (vs both off)",
            f"{cost * 100:+.1f} %",
            "<= 5 %" if target else "",
            cost <= 0.05 if target else None,
        )
    row(
        f"(j) {path}: server CPU per turn off / metrics / json / both",
        " / ".join(f"{cpu[name] * 1e3:.2f}" for name in SETUPS if name != "control") + " ms",
    )
    row(f"(j) {path}: GET /metrics p50 (after the run) / size", f"{ms(scrape)} / {size:,} B")
    if errs.total:
        row(f"(j) {path}: errors", errs.describe(), "0", False)


@contextlib.contextmanager
def _same_cpu() -> Iterator[None]:
    """Start the servers on one CPU, so each pins its threads there (``duragent.cpu``).

    A server pins its threads to the CPU it starts on: servers that happen to start on
    different CPUs differ by more (~15 % of an offline turn, measured with ``control``) than
    what is measured here. The load generator goes back to every CPU afterwards.
    """
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    wide = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(wide)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, wide)


def recording_cost() -> None:
    """(j) what recording one turn's metrics costs in-process (one model call, 3 appends)."""
    metrics = Metrics()
    report = {"window": 8000, "limit": 7000, "request_tokens": 900, "history_sent": 12}
    n = 20_000
    start = time.perf_counter()
    for _ in range(n):
        meter = metrics.meter("bot", "bench-model")
        meter.call(0.004, 0.001)
        meter.budget(report)
        meter.usage(900, 40, None)
        for _ in range(3):
            metrics.event_log_fsync_seconds.observe(0.0002)
        metrics.turn("http", "bot", 0.005)
    took = (time.perf_counter() - start) / n
    row("(j) recording one turn's metrics in-process", f"{took * 1e6:.1f} µs")


async def _scrape(client: httpx.AsyncClient) -> tuple[float, int]:
    took: list[float] = []
    size = 0
    for _ in range(20):
        start = time.perf_counter()
        r = await client.get("/metrics")
        took.append(time.perf_counter() - start)
        r.raise_for_status()
        size = len(r.content)
    return statistics.median(took), size
