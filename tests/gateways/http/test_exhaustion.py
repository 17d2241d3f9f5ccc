"""Out of descriptors: one log line instead of a flood, and /readyz says why it is not ready.

A real ``duragent serve`` child process gets a low RLIMIT_NOFILE (set in the child only), then
more idle connections than it has descriptors. Before the fix, asyncio's accept loop logged a
traceback per queued connection per retry (~13,000 a second, 112 MB in 20 s) and /readyz
answered ``ok`` whenever a probe got through.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.cli.test_serve import free_port

DESCRIPTORS = 64
CONNECTIONS = 150


def _lower_descriptor_limit() -> None:  # runs in the child, between fork and exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


def _get(url: str, timeout: float = 20) -> httpx.Response:
    return httpx.get(url, timeout=timeout, headers={"connection": "close"})


def test_running_out_of_descriptors_logs_once_and_readyz_says_why(tmp_path: Path) -> None:
    (tmp_path / "duragent.yaml").write_text("server:\n  header_timeout_seconds: 2\n")
    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "duragent", "serve", "-c", str(tmp_path), "--port", str(port)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_lower_descriptor_limit,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
    base = f"http://127.0.0.1:{port}"
    held: list[socket.socket] = []
    try:
        for _ in range(400):
            with contextlib.suppress(httpx.TransportError):
                if _get(f"{base}/livez", 1).status_code == 200:
                    break
            time.sleep(0.05)
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNECTIONS)]
        # While the idle ones are closed (header timeout) and the queue refills the freed
        # descriptors, accept keeps failing; a probe that gets through is told so.
        during = _get(f"{base}/readyz")
        time.sleep(2)  # give a flood time to happen
        text = log_path.read_text()
        for sock in held:
            sock.close()
        held = []
        for _ in range(400):
            with contextlib.suppress(httpx.TransportError):
                after = _get(f"{base}/readyz", 2)
                if after.status_code == 200:
                    break
            time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(15)
    assert during.status_code == 503, during.text
    assert during.json()["detail"] == "cannot accept new connections: Too many open files"
    assert text.count("out of system resource") == 1, text[-2000:]
    assert text.count("Traceback") == 1
    assert len(text) < 5000
    assert after.status_code == 200
