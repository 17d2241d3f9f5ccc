"""Find the workspace's running server, or start one in the background (``chat``, ``attach``).

A server answers ``/readyz`` with its workspace hash; a server for another workspace on the
same port is an error, not something to talk to. A started server is detached (own process
group), logs to ``.duragent/logs/server-<port>.log`` and exits by itself after 300 s without
sessions (``--ephemeral``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from duragent.config import LoadedWorkspace

__all__ = ["LaunchError", "ensure_server"]

EPHEMERAL_SECONDS = 300


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


def ensure_server(ws: LoadedWorkspace, port: int | None = None) -> str:
    """The base URL of a server for ``ws``, starting one if none is running."""
    chosen = port or ws.config.server.port
    url = f"http://127.0.0.1:{chosen}"
    ready = _probe(url)
    if ready is not None:
        if ready.get("workspace_hash") != ws.paths.workspace_hash:
            raise LaunchError(
                f"a duragent server for another workspace is running on port {chosen}; "
                "stop it or pass --port"
            )
        return url
    logs = ws.paths.logs
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"server-{chosen}.log"
    with log_path.open("ab") as log_file:
        subprocess.Popen(
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
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(ws.paths.root),
            env=os.environ.copy(),
        )
    delay, deadline = 0.1, time.monotonic() + 15
    while time.monotonic() < deadline:
        if _probe(url) is not None:
            return url
        time.sleep(delay)
        delay = min(1.0, delay * 2)
    raise LaunchError(f"the server did not start within 15 s; see {Path(log_path)}")
