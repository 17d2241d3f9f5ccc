"""Several nodes on one PostgreSQL: durable turns/s, latency, CPU per turn, take-over time.

    .venv/bin/python -m bench.http.cluster            # full run (~2 minutes)
    .venv/bin/python -m bench.http.cluster --quick    # fewer turns, for a smoke check (~40 s)

Every server is a real ``duragent serve`` child process with its own workspace folder (as on
its own machine: a workspace has one server), the offline model, and either the file store
or ``store: {backend: postgres}`` on a fresh schema of the database at
``DURAGENT_BENCH_POSTGRES_DSN`` (default: the local test server), dropped afterwards. Nodes
get distinct ``store.node_id`` and ports.

- **(a) one client, one node**: sequential durable turns, file store vs PostgreSQL: the
  latency a durable turn costs on each store.
- **(b) many clients**: ``--clients`` sessions, each with one client sending turns back to
  back, on 1 node (file), and 1, 2, 3 nodes (PostgreSQL). Each session is created on, and
  always sent to, one node (session *i* on node *i mod N*): today's code serves a session on
  the node that holds its lease; forwarding a request to the owner node is issue 24 item 2.
  Reported: turns/s, p50/p99, and CPU per turn of every node and of PostgreSQL (the backends
  serving this run's connections, from /proc), which is what says what a bigger machine
  gives.
- **(c) take-over**: two nodes, ``store.lease_seconds`` short; node A answers a turn in some
  sessions, is SIGKILLed, and node B is asked for one of them every 100 ms until it answers.
  Target: lease expiry + 1 s.

The load generator runs on the same cores as the servers and the database.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.http.rig import AGENT, ChildServer, Errors, create_sessions, ms, sync_turn
from bench.rigs.process import cpu_seconds
from bench.rigs.table import pct, print_rows, row

DSN = os.environ.get("DURAGENT_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
TAKEOVER_LEASE = 3.0


def config_yaml(store: str, schema: str, node: str, lease: float) -> str:
    text = (
        "server:\n  host: 127.0.0.1\n  request_timeout_seconds: 120\n"
        "sessions:\n  max_live_actors: 1000\n"
    )
    if store == "postgres":
        text += (
            f"store:\n  backend: postgres\n  dsn: '{DSN}'\n  schema: {schema}\n"
            f"  node_id: {node}\n  lease_seconds: {lease:g}\n"
        )
    return text


def workspace(root: Path, store: str, schema: str, node: str, lease: float) -> Path:
    """One node's workspace folder (its own: one server per workspace)."""
    folder = root / node
    agent = folder / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(AGENT)
    config = folder / "duragent.yaml"
    config.write_text(config_yaml(store, schema, node, lease))
    return config


def backend_pids(schema: str) -> set[int]:
    """The PostgreSQL backends serving the nodes of this run (``application_name``).

    Only those: the server is shared with other work on this machine. The WAL writer and
    checkpointer are not counted (small next to the backends, and shared).
    """
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
            (f"duragent:{schema}",),
        ).fetchall()
    return {int(r[0]) for r in rows}


def cpu_of(pids: set[int]) -> dict[int, float]:
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            found[pid] = cpu_seconds(pid)
    return found


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@dataclass
class Cluster:
    """``nodes`` servers on one store; ``log`` gets their output."""

    store: str
    nodes: list[ChildServer] = field(default_factory=list)
    schema: str = ""
    root: Path = Path()


@contextlib.asynccontextmanager
async def cluster(
    store: str, n: int, log_path: Path, lease: float = 30.0
) -> AsyncIterator[Cluster]:
    schema = f"bench_{secrets.token_hex(4)}"
    root = Path(tempfile.mkdtemp(prefix="duragent-cluster-"))
    made = Cluster(store, schema=schema, root=root)
    with log_path.open("ab") as log:
        try:
            for i in range(n):  # one at a time: the first applies the migrations
                config = workspace(root, store, schema, f"node{i + 1}", lease)
                server = ChildServer(config, log)
                await server.start()
                made.nodes.append(server)
            yield made
        finally:
            for server in made.nodes:
                await server.stop()
            shutil.rmtree(root, ignore_errors=True)
            if store == "postgres":
                drop_schema(schema)


@dataclass
class Load:
    latencies: list[float]
    seconds: float
    turns_per_node: list[int]
    cpu_per_node: list[float]
    db_cpu: float
    errors: Errors


async def drive(made: Cluster, clients: int, turns: int) -> Load:
    """``clients`` sessions, session i on node i mod N, each sending ``turns`` turns."""
    n = len(made.nodes)
    errors = Errors()
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with contextlib.AsyncExitStack() as stack:
        http = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=node.base_url, timeout=120, limits=limits)
            )
            for node in made.nodes
        ]
        per_node = [clients // n + (1 if i < clients % n else 0) for i in range(n)]
        owned = [await create_sessions(http[i], per_node[i]) for i in range(n)]
        sessions = [(i, sid) for i in range(n) for sid in owned[i]]
        for i, sid in sessions:  # warm: every actor loaded and its lease claimed
            await sync_turn(http[i], sid, 0, errors)
        latencies: list[float] = []
        done = [0] * n
        pids = [node.pid for node in made.nodes]
        pg = made.store == "postgres"
        db0 = cpu_of(backend_pids(made.schema)) if pg else {}
        cpu0 = [cpu_seconds(p) for p in pids]

        async def user(i: int, sid: str) -> None:
            for k in range(1, turns + 1):
                took = await sync_turn(http[i], sid, k, errors)
                if took is not None:
                    latencies.append(took)
                    done[i] += 1

        began = time.perf_counter()
        await asyncio.gather(*(user(i, sid) for i, sid in sessions))
        seconds = time.perf_counter() - began
        cpu = [cpu_seconds(p) - c for p, c in zip(pids, cpu0, strict=True)]
        db1 = cpu_of(backend_pids(made.schema) | set(db0)) if pg else {}
        db_cpu = sum(t - db0.get(pid, 0.0) for pid, t in db1.items())  # new ones: from 0
        return Load(latencies, seconds, done, cpu, db_cpu, errors)


def report(label: str, load: Load) -> float:
    """Rows for ``load``; returns the CPU per turn of everything (nodes + database), in s."""
    turns = sum(load.turns_per_node)
    row(f"{label}: turns/s", f"{turns / load.seconds:,.0f}/s")
    row(f"{label}: p50 / p99", f"{ms(pct(load.latencies, 0.5))} / {ms(pct(load.latencies, 0.99))}")
    per_node = [
        c / t if t else 0.0 for c, t in zip(load.cpu_per_node, load.turns_per_node, strict=True)
    ]
    row(f"{label}: CPU per turn per node", " / ".join(f"{c * 1e3:.2f}" for c in per_node) + " ms")
    busy = " / ".join(f"{c / load.seconds:.2f}" for c in load.cpu_per_node)
    row(f"{label}: cores used per node", busy)  # one process: the GIL caps it near 1
    db = load.db_cpu / turns if turns else 0.0
    if load.db_cpu:
        row(f"{label}: PostgreSQL CPU per turn", f"{db * 1e3:.2f} ms")
    row(f"{label}: errors", load.errors.describe(), "0", load.errors.total == 0)
    return (sum(load.cpu_per_node) + load.db_cpu) / turns if turns else 0.0


async def one_client(store: str, turns: int, log: Path) -> None:
    async with cluster(store, 1, log) as made:
        load = await drive(made, 1, turns)
        row(f"(a) {store}, 1 node, 1 client: p50", ms(pct(load.latencies, 0.5)))
        row(f"(a) {store}, 1 node, 1 client: p99", ms(pct(load.latencies, 0.99)))
        row(
            f"(a) {store}, 1 node, 1 client: turns/s",
            f"{len(load.latencies) / load.seconds:,.0f}/s",
        )


async def many_clients(store: str, nodes: int, clients: int, turns: int, log: Path) -> None:
    async with cluster(store, nodes, log) as made:
        load = await drive(made, clients, turns)
    label = f"(b) {store}, {nodes} node{'s' if nodes > 1 else ''}, {clients} clients"
    whole = report(label, load)
    cores = os.cpu_count() or 1
    row(f"{label}: CPU per turn, all processes", f"{whole * 1e3:.2f} ms")
    row(f"{label}: CPU-bound ceiling on {cores} cores", f"{cores / whole:,.0f}/s" if whole else "-")


async def take_over(log: Path, sessions: int) -> None:
    async with cluster("postgres", 2, log, lease=TAKEOVER_LEASE) as made:
        a, b = made.nodes
        errors = Errors()
        async with httpx.AsyncClient(base_url=a.base_url, timeout=30) as http_a:
            owned = await create_sessions(http_a, sessions)
            for sid in owned:
                await sync_turn(http_a, sid, 0, errors)
        assert a.proc is not None
        a.proc.send_signal(signal.SIGKILL)
        killed = time.perf_counter()
        await a.proc.wait()
        statuses: dict[str, int] = {}
        answered: float | None = None
        async with httpx.AsyncClient(base_url=b.base_url, timeout=30) as http_b:
            target = owned[0]
            while time.perf_counter() - killed < 30:
                try:
                    r = await http_b.post(
                        f"/api/v1/sessions/{target}/messages", json={"content": "still there?"}
                    )
                    key = str(r.status_code)
                except httpx.HTTPError as exc:
                    key = type(exc).__name__
                statuses[key] = statuses.get(key, 0) + 1
                if key == "200":
                    answered = time.perf_counter() - killed
                    break
                await asyncio.sleep(0.1)
            history = await http_b.get(f"/api/v1/sessions/{target}/messages")
        seen = ", ".join(f"{k} x{n}" for k, n in statuses.items())
        limit = TAKEOVER_LEASE + 1
        row("(c) lease_seconds", f"{TAKEOVER_LEASE:g} s")
        row(
            "(c) SIGKILL of the owner -> another node answers",
            "never (30 s)" if answered is None else f"{answered:.2f} s",
            f"<= {limit:g} s",
            answered is not None and answered <= limit,
        )
        row("(c) answers while waiting", seen)
        kept = history.status_code == 200 and len(history.json()["messages"]) >= 4
        row(
            "(c) history kept after the take-over",
            "yes" if kept else history.text[:60],
            "yes",
            kept,
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns (a smoke check)")
    parser.add_argument("--clients", type=int, default=0, help="sessions in (b) (default 24)")
    args = parser.parse_args()
    clients = args.clients or (8 if args.quick else 24)
    turns = 10 if args.quick else 40
    log = Path(tempfile.gettempdir()) / f"duragent-bench-cluster-{os.getpid()}.log"
    load = os.getloadavg()[0]
    row("machine: cores / load average at start", f"{os.cpu_count()} / {load:.1f}")
    for store in ("file", "postgres"):
        await one_client(store, 50 if args.quick else 300, log)
    await many_clients("file", 1, clients, turns, log)
    for nodes in (1, 2, 3):
        await many_clients("postgres", nodes, clients, turns, log)
    await take_over(log, 3 if args.quick else 10)
    print_rows()
    print(f"\nserver output: {log}")


if __name__ == "__main__":
    asyncio.run(main())
