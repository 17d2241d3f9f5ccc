"""Many more clients than descriptors: a real ``duragent serve`` under a low open-file limit.

Starts ``duragent serve`` (offline echo agent) as a child whose RLIMIT_NOFILE is lowered in the
child only (soft = hard, so the server cannot raise it), then lets ``--clients`` clients loose
at once, each on its own connection: create a session, send it one message. Prints one table
row: requests answered, errors by kind, latency p50/p99, wall time, and how many "Too many open
files" lines the server logged.

    .venv/bin/python -m bench.http.accept                  # 250 clients at ulimit -n 256
    .venv/bin/python -m bench.http.accept --clients 400 --limit 256 --timeout 120
    .venv/bin/python -m bench.http.accept --messages 5     # keep-alive: 5 messages per client

Before the accept cap (specs/202611232220.accept-cap-and-log-floods.md) sockets alone used up
the limit; after it, connections beyond the share wait in the kernel's listen queue.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from duragent.cli.scaffold import scaffold_workspace


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _client(
    base: str, n: int, spec: tuple[float, int], latencies: list[float], errors: list[str]
) -> None:
    """One client on its own connection: create a session, then send it messages."""
    limit_s, messages = spec
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    # verify=False: plain HTTP; loading the CA bundle per client would cost the bench ~20 ms each
    async with httpx.AsyncClient(
        base_url=base, timeout=limit_s, limits=limits, verify=False
    ) as client:
        path, body = "/api/v1/sessions", {"agent": "assistant"}
        for step in range(1 + messages):
            started = time.monotonic()
            try:
                answer = await client.post(path, json=body)
            except httpx.TransportError as exc:
                errors.append(type(exc).__name__)
                return
            latencies.append(time.monotonic() - started)
            if answer.status_code >= 300:
                detail = answer.json().get("detail", "") if answer.content else ""
                errors.append(f"HTTP {answer.status_code}: {str(detail)[:30]}")
                return
            if step == 0:
                path = f"/api/v1/sessions/{answer.json()['session_id']}/messages"
                body = {"content": f"message {n}"}


def run(clients: int, limit: int, timeout: float, messages: int = 1) -> dict[str, object]:
    """One round; returns the row's numbers."""
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
        root = Path(tmp)
        scaffold_workspace(root, "assistant", "offline", "echo")
        port = _free_port()
        log_path = root / "serve.log"

        def lower() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        with log_path.open("w") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "duragent", "serve", "-c", str(root), "--port", str(port)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                preexec_fn=lower,
            )
        try:
            for _ in range(400):
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/livez", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            latencies: list[float] = []
            errors: list[str] = []
            started = time.monotonic()

            async def everyone() -> None:
                base = f"http://127.0.0.1:{port}"
                await asyncio.gather(
                    *(
                        _client(base, n, (timeout, messages), latencies, errors)
                        for n in range(clients)
                    )
                )

            asyncio.run(everyone())
            wall = time.monotonic() - started
        finally:
            proc.terminate()
            proc.wait(30)
        text = log_path.read_text()
    latencies.sort()
    return {
        "answered": len(latencies) - sum(e.startswith("HTTP") for e in errors),
        "requests": (1 + messages) * clients,
        "errors": dict(collections.Counter(errors)),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan"),
        "wall": wall,
        "emfile_lines": text.count("Too many open files"),
    }


def main() -> None:
    """Parse flags, run one round, print the row."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=250)
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--messages", type=int, default=1, help="messages per client")
    args = parser.parse_args()
    row = run(args.clients, args.limit, args.timeout, args.messages)
    print(
        "| clients | limit | messages each | answered/requests | errors | p50 s | p99 s "
        "| wall s | EMFILE lines |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.clients} | {args.limit} | {args.messages} | "
        f"{row['answered']}/{row['requests']} | "
        f"{row['errors'] or 'none'} | {row['p50']:.2f} | {row['p99']:.2f} | "
        f"{row['wall']:.1f} | {row['emfile_lines']} |"
    )


if __name__ == "__main__":
    main()
