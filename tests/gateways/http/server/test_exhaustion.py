"""Far more clients than descriptors: a real ``duragent serve`` answers them all, in turn.

The child process gets a low RLIMIT_NOFILE (soft = hard, set in the child only, so the server
cannot raise it). At 256 the budget gives HTTP 32 connections; the server keeps at most that
many open and leaves the rest in the listen queue. Before, sockets alone used up the limit:
250 clients at 256 got "storage error" 503s (sessions could not open their logs) and the log
had hundreds of "Too many open files"; with a 64 limit and 150 idle connections asyncio's
accept loop logged ~13,000 tracebacks a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from duragent.cli.scaffold import scaffold_workspace
from tests.cli.test_serve import free_port

DESCRIPTORS = 256
CLIENTS = 250


def _lower_descriptor_limit() -> None:  # runs in the child, between fork and exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


@contextlib.contextmanager
def _serve(root: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    log_path = root / "serve.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "duragent", "serve", "-c", str(root), "--port", str(port)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_lower_descriptor_limit,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(2_400):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/livez", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield base, log_path
    finally:
        proc.terminate()
        proc.wait(120)


async def _one_client(base: str, n: int, outcomes: list[str]) -> None:
    """Its own connection: create a session, send it a message."""
    limits = httpx.Limits(max_connections=1)
    async with httpx.AsyncClient(base_url=base, timeout=90, limits=limits, verify=False) as c:
        try:
            made = await c.post("/api/v1/sessions", json={"agent": "assistant"})
            if made.status_code != 201:
                outcomes.append(f"create {made.status_code}: {made.text[:80]}")
                return
            sid = made.json()["session_id"]
            reply = await c.post(f"/api/v1/sessions/{sid}/messages", json={"content": f"m{n}"})
            outcomes.append("ok" if reply.status_code == 200 else f"send {reply.status_code}")
        except httpx.TransportError as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")


@pytest.mark.timeout(240)
def test_250_clients_at_256_descriptors_are_all_answered_without_running_out(
    tmp_path: Path,
) -> None:
    scaffold_workspace(tmp_path, "assistant", "offline", "echo")
    outcomes: list[str] = []
    with _serve(tmp_path) as (base, log_path):

        async def everyone() -> None:
            await asyncio.gather(*(_one_client(base, n, outcomes) for n in range(CLIENTS)))

        asyncio.run(everyone())
    text = log_path.read_text()
    failures = [o for o in outcomes if o != "ok"]
    assert not failures, (len(failures), failures[:3], text[-2000:])
    assert len(outcomes) == CLIENTS
    assert "Too many open files" not in text
    assert "Traceback" not in text


@pytest.mark.timeout(240)
def test_silent_connections_do_not_lock_a_probe_out_and_readyz_says_connections_wait(
    tmp_path: Path,
) -> None:
    # A long header timeout: only closing quiet connections can let the probe in soon.
    scaffold_workspace(tmp_path, "assistant", "offline", "echo")
    config = tmp_path / "duragent.yaml"
    config.write_text(config.read_text() + "server:\n  header_timeout_seconds: 120\n")
    held: list[socket.socket] = []
    with _serve(tmp_path) as (base, log_path):
        try:
            port = int(base.rsplit(":", 1)[1])
            held = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
            during = httpx.get(f"{base}/readyz", timeout=60, headers={"connection": "close"})
        finally:
            for sock in held:
                sock.close()
        after = None
        for _ in range(1_200):
            with contextlib.suppress(httpx.TransportError):
                after = httpx.get(f"{base}/readyz", timeout=5)
                if after.status_code == 200:
                    break
            time.sleep(0.1)
    text = log_path.read_text()
    assert during.status_code == 503, during.text
    assert during.json()["detail"] == (
        "all 32 connections the open-file limit allows are open; "
        "new connections wait to be accepted"
    )
    assert after is not None
    assert after.status_code == 200
    assert "Too many open files" not in text
