"""Find the workspace's running server, or start one in the background (``chat``, ``attach``).

The server of a workspace is the process holding its lock (``store.serve_lock``), wherever it
listens: its address is read from the lock file and confirmed by its ``/readyz`` (same PID),
so a server started with ``--port 9000`` is found even though the config says 8080, and a
second server is never started beside it. Only when no process holds the lock is one
started, on the configured port; a server of another workspace answering there is an error,
not something to talk to. A started server is detached (own process group), logs to
``.duragent/logs/server-<port>.log`` and exits by itself after 300 s without sessions
(``--ephemeral``). Two launchers racing both start one; the loser exits on the lock and both
connect to the winner.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from duragent.config import LoadedWorkspace
from duragent.store.serve_lock import Holder, lock_files, read_holder

__all__ = ["LaunchError", "ensure_server", "running_server"]

EPHEMERAL_SECONDS = 300
START_TIMEOUT_SECONDS = 15.0


class LaunchError(Exception):
    """No usable server could be found or started."""


def _probe(url: str) -> dict[str, object] | None:
    try:
        response = httpx.get(f"{url}/readyz", timeout=1.0)
        if response.status_code in (200, 503):  # 503: running but busy; still ours to use
            data = response.json()
            return data if isinstance(data, dict) and "workspace_hash" in data else None
    except (httpx.HTTPError, ValueError):
        return None
    return None


def _client_url(address: str) -> str:
    """A server's published address, made reachable: a wildcard bind is reached locally."""
    for wildcard, local in (("://0.0.0.0:", "://127.0.0.1:"), ("://[::]:", "://[::1]:")):
        address = address.replace(wildcard, local)
    return address.rstrip("/")


def _holder(ws: LoadedWorkspace) -> Holder | None:
    for path in lock_files(ws.paths.workspace, ws.paths.sessions):
        holder = read_holder(path)
        if holder is not None:
            return holder
    return None


def running_server(ws: LoadedWorkspace, wait: float = 0.0) -> str | None:
    """The URL of the server holding ``ws``'s lock, or None when no process holds it.

    A holder still starting (no address yet, or not answering) is waited for up to ``wait``
    seconds; a holder that then still does not answer as itself is a ``LaunchError``.
    """
    deadline = time.monotonic() + wait
    delay = 0.05
    while True:
        holder = _holder(ws)
        if holder is None:
            return None
        if holder.address is not None:
            url = _client_url(holder.address)
            ready = _probe(url)
            if ready is not None and ready.get("pid") in (holder.pid, None):
                return url
        if time.monotonic() >= deadline:
            who = f"PID {holder.pid}" if holder.pid is not None else "another process"
            where = f" at {holder.address}" if holder.address else ""
            raise LaunchError(
                f"workspace {ws.paths.workspace} is held by {who}{where}, which does not "
                "answer; wait for it to start, or stop it"
            )
        time.sleep(delay)
        delay = min(0.5, delay * 2)


def ensure_server(
    ws: LoadedWorkspace,
    port: int | None = None,
    *,
    announce: Callable[[str], None] | None = None,
    agents_dir: str | None = None,
) -> str:
    """The base URL of the server for ``ws``, starting one if none holds its lock.

    ``announce`` is told, when a server is started, where it listens, where it logs and
    when it stops by itself: a process the user did not start should not be a surprise.
    ``agents_dir`` is passed to a server started here (``serve --agents-dir``).
    """
    url = running_server(ws, wait=START_TIMEOUT_SECONDS)
    if url is not None:
        return url
    chosen = ws.config.server.port if port is None else port
    local = f"http://127.0.0.1:{chosen}"
    ready = _probe(local)
    if ready is not None and ready.get("workspace_hash") != ws.paths.workspace_hash:
        raise LaunchError(
            f"a duragent server for another workspace is running on port {chosen}; "
            "stop it, or pass --port N (or DURAGENT_PORT, or set server.port) to use another"
        )
    logs = ws.paths.logs
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"server-{chosen}.log"
    with log_path.open("ab") as log_file:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "duragent",
                "serve",
                "-c",
                str(ws.paths.config_file),
                "--host",
                "127.0.0.1",
                "--port",
                str(chosen),
                "--ephemeral",
                str(EPHEMERAL_SECONDS),
                *(["--agents-dir", agents_dir] if agents_dir else []),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(ws.paths.root),
            env=os.environ.copy(),
        )
    delay, deadline = 0.1, time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        # our child, or the winner of a race with another launcher (our child then exits)
        url = running_server(ws, wait=max(0.0, deadline - time.monotonic()))
        if url is not None:
            if announce is not None:
                announce(
                    f"started a server for {ws.paths.root} on {url}; "
                    f"it logs to {log_path} and stops by itself after {EPHEMERAL_SECONDS} s "
                    "without sessions"
                )
            return url
        if child.poll() is not None:
            raise LaunchError(
                f"the server exited with status {child.returncode}; see {Path(log_path)}"
            )
        time.sleep(delay)
        delay = min(1.0, delay * 2)
    raise LaunchError(f"the server did not start within 15 s; see {Path(log_path)}")
