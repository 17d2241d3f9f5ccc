"""Halfway through a run, the file store becomes PostgreSQL with two nodes (issue 40).

What an operator does to move a deployment onto PostgreSQL, then scale it out, done by the
bench with the product's own commands (``specs/202612060130.month-postgres-half-plan.md``):

1. stop the one node cleanly (SIGTERM; its turns in flight end as a shutdown ends them);
2. write the ``store:`` block into its ``duragent.yaml`` (backend postgres, the schema, node
   id ``a``, the lease);
3. ``duragent store copy --from file --to postgres`` (the real CLI, as a child process):
   a non-zero exit, or a warning it prints, is a problem of the run;
4. make node ``b``'s folder: its own ``duragent.yaml`` (node id ``b``, the fakes' addresses
   with the ``/n/b`` prefix, so every call it makes is attributed to it) and links to node
   a's agent folders, pairing and memory: what the store does not hold, shared as a shared
   file system would share it (the user reference says per-node state must be shared so);
5. start both, node a first (it recovers every chat: the copy left every lease free).

The view (``store_view.SwitchedView``) then reads the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.year.store_view import StoreView
from bench.year.store_view_pg import PgView
from duragent.testing.serve_nodes import ServeNodes

__all__ = [
    "DEFAULT_DSN",
    "NODE_B",
    "ClusterPlan",
    "StoreSwitch",
    "SwitchReport",
    "drop_cluster",
    "drop_schema",
]

DEFAULT_DSN = os.environ.get(
    "DURAGENT_BENCH_POSTGRES_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres"
)
"""The database the second half runs on (the machine's local server by default)."""

NODE_B = "node-b"
"""Node b's folder, inside node a's (the run's root)."""
SHARED = ("agents", "pairing", "memory")
"""What of node a's ``.duragent`` folder node b links to: not in the store (module docstring)."""

Config = dict[str, Any]


@dataclass(frozen=True)
class ClusterPlan:
    """Half the run on PostgreSQL with two nodes: when, on what, with which lease."""

    share: float = 0.5
    """The part of the run's messages written before the switch."""
    lease_seconds: float = 3.0
    dsn: str = DEFAULT_DSN
    schema: str = field(default_factory=lambda: f"month_{secrets.token_hex(4)}")
    keep: bool = False
    """Keep the schema after the run (to read it); dropped otherwise."""


@dataclass
class SwitchReport:
    """How the switch went: the copy's output and seconds, and what went wrong."""

    schema: str
    copy_seconds: float = 0.0
    copy_output: str = ""
    down_seconds: float = 0.0
    """From the SIGTERM to both nodes ready."""
    problems: list[str] = field(default_factory=list)


class StoreSwitch:
    """Switches one running node on files to two nodes on PostgreSQL (module docstring).

    ``for_node(config, name)``: node ``name``'s ``duragent.yaml`` from node a's (the world
    knows its gateways: it points each at the fakes' ``/n/<name>`` prefix).
    """

    def __init__(
        self,
        plan: ClusterPlan,
        serve: ServeNodes,
        for_node: Callable[[Config, str], Config],
        view: StoreView | None = None,
    ) -> None:
        self.plan = plan
        self.serve = serve
        self.view = view
        """The run's view, switched to the database once the copy is done."""
        self.on_stopped: list[Callable[[], None]] = []
        """Called once node a is stopped, before its ``duragent.yaml`` is rewritten (a world
        that fingerprints the workspace's protected files compares them here)."""
        self.on_made: list[Callable[[Path], None]] = []
        """Called with node b's folder once it is made, before either node starts."""
        self.for_node = for_node
        self.report = SwitchReport(plan.schema)

    @property
    def root(self) -> Path:
        """Node a's folder (the workspace the run started with)."""
        return self.serve.config.parent

    def store_block(self, node: str) -> Config:
        """The ``store:`` block of node ``node``'s ``duragent.yaml``."""
        return {
            "backend": "postgres",
            "dsn": self.plan.dsn,
            "schema": self.plan.schema,
            "node_id": node,
            "lease_seconds": self.plan.lease_seconds,
        }

    async def run(self) -> SwitchReport:
        """Stop, copy, make node b, start both (module docstring)."""
        started = time.monotonic()
        # on a thread: the fake platforms answer on this loop, and a graceful stop finishes
        # the sends under way (a loop held here froze them: timed-out sends that had arrived,
        # then sent again by the next life)
        await asyncio.to_thread(self.serve.stop)
        for hook in self.on_stopped:
            hook()
        config: Config = json.loads(self.serve.config.read_text())
        config["store"] = self.store_block("a")
        self.serve.config.write_text(json.dumps(config))
        await self._copy()
        b_config = self._make_node_b(config)
        for made in self.on_made:
            made(b_config.parent)
        self.serve.start()
        await self.serve.wait_ready(accept=("running", "standby"))
        a_config = str(self.serve.config)
        command = [
            b_config.as_posix() if part == a_config else part for part in self.serve.command or []
        ]
        b = self.serve.add("b", b_config, command=command or None)
        b.start()
        await b.wait_ready(accept=("running", "standby"))
        self.report.down_seconds = time.monotonic() - started
        return self.report

    async def _copy(self) -> None:
        began = time.monotonic()
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "duragent", "store", "copy", "--from", "file", "--to",
            "postgres", "-c", str(self.serve.config),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, self.serve.pythonpath))},
        )  # fmt: skip
        out, _ = await child.communicate()
        self.report.copy_seconds = time.monotonic() - began
        self.report.copy_output = out.decode(errors="replace")
        if child.returncode != 0:
            self.report.problems.append(
                f"store copy exited {child.returncode}: {self.report.copy_output[-500:]}"
            )
        warned = [
            line for line in self.report.copy_output.splitlines() if "warning" in line.lower()
        ]
        self.report.problems.extend(f"store copy: {line[:200]}" for line in warned)

    def _make_node_b(self, a_config: Config) -> Path:
        folder = self.root / NODE_B
        (folder / ".duragent").mkdir(parents=True, exist_ok=True)
        for name in SHARED:
            target = self.root / ".duragent" / name
            target.mkdir(parents=True, exist_ok=True)
            (folder / ".duragent" / name).symlink_to(target, target_is_directory=True)
        config = self.for_node(json.loads(json.dumps(a_config)), "b")
        config["store"] = self.store_block("b")
        path = folder / "duragent.yaml"
        path.write_text(json.dumps(config))
        return path


def drop_cluster(plan: ClusterPlan, view: PgView | None) -> None:
    """Close the run's view of the database and drop the run's schema (unless the plan
    keeps it): a bench run leaves no schema behind, even when it failed."""
    if view is not None:
        view.close()
    if not plan.keep:
        with contextlib.suppress(Exception):  # the schema may never have been made
            drop_schema(plan.dsn, plan.schema)


def drop_schema(dsn: str, schema: str) -> None:
    """Drop a run's schema and all it holds."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
