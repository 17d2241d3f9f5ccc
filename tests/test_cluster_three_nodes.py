"""Three ``duragent serve`` processes on one PostgreSQL: one killed, one paused past its lease.

Clients send to random live nodes for the same sessions (as a load balancer would); a node is
SIGKILLed, another SIGSTOPped longer than its lease and then SIGCONTed. Afterwards: no
acknowledged message lost, none answered twice, ``seq`` contiguous in every session, and the
paused node's writes refused by the lease fence (counted from its log and printed).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.gateways.serve_process import free_port
from tests.store import postgres_db

ROOT = Path(__file__).resolve().parents[1]
LEASE = 1.5


class Node:
    """One ``duragent serve`` process with its own workspace and node id."""

    def __init__(self, base: Path, schema: str, name: str) -> None:
        self.name = name
        self.root = base / name
        agent = self.root / ".duragent" / "agents" / "alpha"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(
            "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: alpha\n"
            "spec:\n  model:\n    provider: offline\n    name: duragent-offline\n"
        )
        (self.root / "duragent.yaml").write_text(
            f"store:\n  backend: postgres\n  dsn: '{postgres_db.DSN}'\n  schema: {schema}\n"
            f"  node_id: {name}\n  lease_seconds: {LEASE}\n"
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.root / "serve.log"
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "duragent",
                    "serve",
                    "-c",
                    str(self.root / "duragent.yaml"),
                    "--port",
                    str(self.port),
                ],
                stdout=subprocess.DEVNULL,
                stderr=out,
                env=env,
            )
        self.up = True

    async def ready(self, client: httpx.AsyncClient) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if (await client.get(f"{self.url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
        raise AssertionError(f"{self.name} not ready")

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Clients:
    """Sequential senders, one per session, to random live nodes; retries without duplicates."""

    def __init__(self, nodes: list[Node], client: httpx.AsyncClient) -> None:
        self.nodes = nodes
        self.client = client
        self.acked: dict[str, list[str]] = {}
        self.retried = 0

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.up]

    async def send(self, sid: str, text: str) -> float:
        """Send until acknowledged; seconds it took."""
        began = time.monotonic()
        while True:
            node = random.choice(self.live())
            try:
                answer = await self.client.post(
                    f"{node.url}/api/v1/sessions/{sid}/messages", json={"content": text}
                )
            except httpx.TransportError:  # the node died under us: did it record the message?
                self.retried += 1
                if await self.recorded(sid, text):
                    return time.monotonic() - began
                continue
            if answer.status_code == 200:
                self.acked.setdefault(sid, []).append(text)
                return time.monotonic() - began
            assert answer.status_code == 503, answer.text  # the owner changing: retry
            self.retried += 1
            await asyncio.sleep(0.2)

    async def recorded(self, sid: str, text: str) -> bool:
        node = random.choice(self.live())
        history = await self.client.get(f"{node.url}/api/v1/sessions/{sid}/messages?limit=1000")
        return text in [m["content"] for m in history.json()["messages"] if m["role"] == "user"]

    async def round(self, sessions: list[str], label: str) -> float:
        took = await asyncio.gather(*(self.send(sid, f"{sid}:{label}") for sid in sessions))
        return max(took)


def owner_of(schema: str, sid: str) -> str | None:
    with postgres_db.psycopg.connect(postgres_db.DSN) as conn:
        conn.execute(f"SET search_path = {schema}")
        row = conn.execute(
            "SELECT owner_node FROM sessions WHERE session_id = %s", (sid,)
        ).fetchone()
    return None if row is None else row[0]


def seqs(schema: str) -> dict[str, list[int]]:
    with postgres_db.psycopg.connect(postgres_db.DSN) as conn:
        conn.execute(f"SET search_path = {schema}")
        rows = conn.execute(
            "SELECT s.session_id, e.seq FROM events e JOIN sessions s USING (session_key) "
            "ORDER BY 1, 2"
        ).fetchall()
    out: dict[str, list[int]] = {}
    for sid, seq in rows:
        out.setdefault(str(sid), []).append(int(seq))
    return out


async def test_three_nodes_lose_nothing_when_one_dies_and_one_pauses(tmp_path: Path) -> None:
    with postgres_db.fresh_schema() as schema:
        nodes = [Node(tmp_path, schema, f"node{i}") for i in range(3)]
        try:
            async with httpx.AsyncClient(timeout=30) as client:
                for node in nodes:
                    await node.ready(client)
                sessions = []
                for node in nodes:  # one session owned by each node to start with
                    made = await client.post(f"{node.url}/api/v1/sessions", json={"agent": "alpha"})
                    sessions.append(made.json()["session_id"])
                clients = Clients(nodes, client)
                for i in range(3):
                    await clients.round(sessions, f"warm{i}")
                killed, paused = nodes[0], nodes[1]
                dead_owned = [s for s in sessions if owner_of(schema, s) == killed.name]
                killed.signal(signal.SIGKILL)
                killed.proc.wait(10)
                killed.up = False
                takeover = max(
                    [await clients.send(s, f"{s}:after-kill") for s in dead_owned] or [0.0]
                )
                paused_owned = [s for s in sessions if owner_of(schema, s) == paused.name]
                paused.signal(signal.SIGSTOP)
                paused.up = False
                for i in range(2):
                    await clients.round(sessions, f"paused{i}")
                await asyncio.sleep(LEASE)  # well past its lease: every session moved
                for i in range(2):
                    await clients.round(sessions, f"moved{i}")
                paused.signal(signal.SIGCONT)
                paused.up = True
                await asyncio.sleep(LEASE)  # its keeper renews, finds its leases lost
                for i in range(3):
                    await clients.round(sessions, f"after{i}")
                histories = {}
                for sid in sessions:
                    answer = await client.get(
                        f"{nodes[2].url}/api/v1/sessions/{sid}/messages?limit=1000"
                    )
                    histories[sid] = answer.json()["messages"]
        finally:
            for node in nodes:
                node.stop()
        logged = paused.log.read_text()
        fenced = logged.count("stale epoch")
        numbers = seqs(schema)
    print(
        f"\nthree nodes: {sum(len(v) for v in clients.acked.values())} messages acknowledged, "
        f"{clients.retried} client retries; take-over after SIGKILL {takeover:.2f} s "
        f"(lease {LEASE} s); SIGCONTed node: {fenced} fenced write(s) refused "
        f"(it owned {len(paused_owned)} session(s))"
    )
    for sid in sessions:
        users = [m["content"] for m in histories[sid] if m["role"] == "user"]
        for text in clients.acked[sid]:
            assert users.count(text) == 1, (text, users)  # 0 lost, none recorded twice
        roles = [m["role"] for m in histories[sid] if m["role"] in ("user", "assistant")]
        pairs = list(itertools.pairwise(roles))
        assert ("assistant", "assistant") not in pairs, roles  # none answered twice
        assert numbers[sid] == list(range(1, len(numbers[sid]) + 1))  # seq contiguous
    assert takeover <= LEASE + 1.0 + 1.0  # lease expiry + 1 s target, + 1 s of test slack
    if paused_owned:
        assert fenced >= 1, logged[-3000:]
