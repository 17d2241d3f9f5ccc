"""``bench/http_api.py`` section (j): what metrics and JSON logging cost a turn, in one run.

Four ``duragent serve`` children at once on the provider path (the ``openai`` SDK to the
scripted model server in its own process, as in (d) and (i)), at the default level (INFO):

- ``off``: ``server.metrics: false`` and ``--log-format text`` (the reference point);
- ``metrics``: metrics on (the default), text logs;
- ``json``: metrics off, ``DURAGENT_LOG_FORMAT=json``;
- ``both``: metrics on and JSON logs (what the issue's target is about).

One client sends turns round-robin over the four, the order rotating each round, so a slow
moment of the shared machine hits every configuration alike. "cost" = the median, over
rounds, of (configuration / off) − 1 (target for ``both``: ≤ 5 %, issue #22). The server
CPU per turn says what was paid for. Then the scrape: ``GET /metrics`` on the ``both`` server
(median time and the exposition's size after the run).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import httpx
from _http_rig import (
    CONFIG,
    LIMITS,
    ChildServer,
    Errors,
    FakeModel,
    agent_for,
    cpu_seconds,
    create_sessions,
    ms,
    row,
    sync_turn,
    write_workspace,
)

SETUPS = {  # name → (metrics on, log format)
    "off": (False, "text"),
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
    n = 60 if quick else 400
    with (base / "metrics-model.log").open("wb") as model_log:
        model = FakeModel(model_log)
        await model.start()
        try:
            await _rounds(base, agent_for("openai", model.base_url), n)
        finally:
            await model.stop()


async def _rounds(base: Path, agent: str, n: int) -> None:
    servers: dict[str, ChildServer] = {}
    logs = {name: (base / f"metrics-{name}.log").open("wb") for name in SETUPS}
    errs = Errors()
    times: dict[str, list[float]] = {name: [] for name in SETUPS}
    ratios: dict[str, list[float]] = {name: [] for name in SETUPS if name != "off"}
    try:
        for name, (metrics, fmt) in SETUPS.items():
            config = _workspace(base / f"metrics-{name}", agent, metrics)
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
                order = names[i % 4 :] + names[: i % 4]
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
        "(j) sync turn p50 off / metrics / json / both",
        " / ".join(ms(statistics.median(times[name])) for name in SETUPS),
    )
    for name, label in (("metrics", "metrics"), ("json", "JSON logging"), ("both", "both")):
        cost = statistics.median(ratios[name]) - 1
        target = name == "both"
        row(
            f"(j) cost of {label} on a turn (vs both off)",
            f"{cost * 100:+.1f} %",
            "<= 5 %" if target else "",
            cost <= 0.05 if target else None,
        )
    row(
        "(j) server CPU per turn off / metrics / json / both",
        " / ".join(f"{cpu[name] * 1e3:.2f}" for name in SETUPS) + " ms",
    )
    row("(j) GET /metrics p50 (after the run) / exposition size", f"{ms(scrape)} / {size:,} B")
    if errs.total:
        row("(j) errors", errs.describe(), "0", False)


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
