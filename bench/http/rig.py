"""Plumbing shared by ``bench/http/api.py``'s sections and ``cluster.py``: servers in child
processes, clients, timing. Not a benchmark itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import httpx

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
  description: HTTP benchmark bot (offline model)
spec:
  model:
    provider: offline
    name: duragent-offline
  session:
    on_disconnect: pause
"""

CONFIG = """\
server:
  host: 127.0.0.1
  request_timeout_seconds: 120
sessions:
  max_live_actors: 1000
"""

QUESTION = "How do I rotate a log file every day and keep a week of them? (request {i})"

LIMITS = httpx.Limits(max_connections=300, max_keepalive_connections=300)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def write_workspace(root: Path, agent_yaml: str = AGENT) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "duragent.yaml").write_text(CONFIG)
    agent = root / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(agent_yaml)
    return root / "duragent.yaml"


PROVIDER_MODEL = """\
    provider: {provider}
    name: bench-model
    base_url: {base_url}
    max_input_tokens: 400000
    max_output_tokens: 1000
"""


def agent_for(provider: str, base_url: str | None) -> str:
    """The bench agent on ``provider`` (``offline``, ``openai`` or ``anthropic``).

    ``openai`` is an OpenAI-compatible endpoint at the scripted server (a custom provider
    name with a ``base_url``: no key needed); ``anthropic`` is the Anthropic provider pointed
    at the same server. The window is large so that 2,000 messages of history all fit.
    """
    if provider == "offline":
        return AGENT
    name = "anthropic" if provider == "anthropic" else "scripted"
    url = base_url if provider == "anthropic" else f"{base_url}/v1"
    model = PROVIDER_MODEL.format(provider=name, base_url=url)
    return AGENT.replace("    provider: offline\n    name: duragent-offline\n", model)


class FakeModel:
    """``duragent.testing``'s scripted server in its own process, answering every request.

    The instant model: a fixed streamed reply, no delay. It keeps only its latest requests
    (``--keep-requests``): every request of a long chat carries the whole history, and
    thousands of parsed bodies kept alive would make its garbage collector the cost that grows.
    """

    REPLY = "Use logrotate: daily, rotate 7, compress."

    def __init__(self, log: IO[bytes]) -> None:
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.base_url = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "duragent.testing.fake_llm_server",
            "--port",
            "0",
            "--keep-requests",
            "4",
            "--reply-text",
            self.REPLY,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.log,
        )
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), 60)).decode()
        if not line.startswith("listening on "):
            raise RuntimeError(f"the scripted server did not start: {line!r}")
        self.base_url = line.split()[-1]

    async def served(self, http: httpx.AsyncClient) -> float:
        """Seconds this server has spent answering model requests so far (``/_fake/served``)."""
        answer = await http.get(f"{self.base_url}/_fake/served")
        return float(answer.json()["seconds"])

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


class Errors:
    """Failures by kind (status code, exception name, missing ``done``)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.first: dict[str, str] = {}

    def add(self, kind: str, detail: str) -> None:
        self.kinds[kind] += 1
        self.first.setdefault(kind, detail[:300])

    @property
    def total(self) -> int:
        return sum(self.kinds.values())

    def describe(self) -> str:
        return ", ".join(f"{k} x{n}" for k, n in self.kinds.most_common()) or "none"


# --- the server in a child process -----------------------------------------------------------


class ChildServer:
    """``python -m duragent serve`` on a free port; output goes to ``log``."""

    def __init__(
        self,
        config: Path,
        log: IO[bytes],
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.config = config
        self.args = args
        self.log = log
        self.env = {**os.environ, **(env or {})}
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, wait_seconds: float = 60.0, poll_seconds: float = 0.1) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "duragent",
            "serve",
            "-c",
            str(self.config),
            "--port",
            str(self.port),
            *self.args,
            stdout=self.log,
            stderr=self.log,
            env=self.env,
        )
        deadline = time.monotonic() + wait_seconds
        async with httpx.AsyncClient(base_url=self.base_url, timeout=2) as probe:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await probe.get("/readyz")).status_code == 200:
                        return
                await asyncio.sleep(poll_seconds)
        raise RuntimeError(f"server not ready after {wait_seconds:.0f} s")

    async def stop(self) -> int | None:
        if self.proc is None or self.proc.returncode is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()  # SIGTERM: graceful stop (sessions flushed)
        try:
            return await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()


# --- load ------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def clients_for(
    base_url: str, sessions: list[str], shared: httpx.AsyncClient | None
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """The HTTP client of each session's simulated user (``shared`` for all, if given)."""
    if shared is not None:
        yield dict.fromkeys(sessions, shared)
        return
    tls = ssl.create_default_context()  # unused on http://, but built once, not per client
    async with contextlib.AsyncExitStack() as stack:
        own = {}
        for sid in sessions:
            client = httpx.AsyncClient(base_url=base_url, timeout=120, verify=tls)
            own[sid] = await stack.enter_async_context(client)
        yield own


async def create_sessions(http: httpx.AsyncClient, n: int) -> list[str]:
    async def one() -> str:
        r = await http.post("/api/v1/sessions", json={"agent": "bot"})
        r.raise_for_status()
        return str(r.json()["session_id"])

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def sync_turn(http: httpx.AsyncClient, sid: str, i: int, errors: Errors) -> float | None:
    """Latency of one synchronous turn, or None when it failed."""
    start = time.perf_counter()
    try:
        r = await http.post(
            f"/api/v1/sessions/{sid}/messages", json={"content": QUESTION.format(i=i)}
        )
    except httpx.HTTPError as exc:
        errors.add(type(exc).__name__, repr(exc))
        return None
    elapsed = time.perf_counter() - start
    if r.status_code != 200:
        errors.add(f"HTTP {r.status_code}", r.text)
        return None
    return elapsed


async def stream_turn(
    http: httpx.AsyncClient, sid: str, i: int, errors: Errors
) -> tuple[float, float] | None:
    """(time to first token, time to the end of the stream), or None when it failed."""
    start = time.perf_counter()
    first: float | None = None
    done = False
    try:
        async with http.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": QUESTION.format(i=i)}
        ) as r:
            if r.status_code != 200:
                await r.aread()
                errors.add(f"HTTP {r.status_code}", r.text)
                return None
            event = ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                    if event == "token" and first is None:
                        first = time.perf_counter() - start
                    elif event == "done":
                        done = True
                elif line.startswith("data:") and event == "error":
                    errors.add("event: error", line)
                    return None
    except httpx.HTTPError as exc:
        errors.add(type(exc).__name__, repr(exc))
        return None
    total = time.perf_counter() - start
    if first is None or not done:
        errors.add("stream without token/done", f"first={first} done={done}")
        return None
    return first, total


Result = float | tuple[float, float]


async def run_clients(
    sessions: list[str], per_client: int, turn: Callable[[str, int], Awaitable[Result | None]]
) -> tuple[list[Result], float]:
    """Every client sends ``per_client`` turns one after the other; (results, wall seconds)."""
    results: list[Result] = []

    async def client(sid: str) -> None:
        for i in range(per_client):
            value = await turn(sid, i)
            if value is not None:
                results.append(value)

    start = time.perf_counter()
    await asyncio.gather(*(client(s) for s in sessions))
    return results, time.perf_counter() - start
