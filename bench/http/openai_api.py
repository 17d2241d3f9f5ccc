"""``bench/http/api.py``'s sections on the OpenAI-compatible API and on JSON logging.

Both against ``duragent serve`` children on the offline model (instant, no network), so what
is measured is the front end, the turn and the log lines, not a model.

(h) The OpenAI-compatible path: one client takes the same turn four ways, round-robin (so a
    slow moment of the shared machine hits every way alike): duragent's own
    ``POST /api/v1/sessions/{id}/messages``; ``POST /v1/chat/completions`` with httpx
    (``session_id`` in the body); the same through the official ``openai`` SDK
    (``AsyncOpenAI``, ``max_retries=0``); and streamed through the SDK (time to the first
    content chunk, and to ``[DONE]``). Then 50 SDK clients at once, each its own
    conversation: turns/s and p99. "OpenAI path overhead" = completions (httpx) p50 over the
    native p50: what the mapping (session lookup by key, OpenAI's JSON) costs a turn.
(i) JSON logging: two servers at once, one ``--log-format text`` and one ``json``
    (``DURAGENT_LOG_FORMAT``), turns alternating between them, on the provider path (the
    ``openai`` SDK to the scripted model server in its own process, as in (d)); at the default
    level (INFO: what a deployment runs; a healthy turn logs nothing) and at ``-vv`` (DEBUG
    with the HTTP clients' lines: every model call writes several lines).
    "cost" = the median, over adjacent pairs of turns, of json / text − 1 (drift of the shared
    machine cancels within a pair; target ≤ 5 %, issue #22, with metrics too: metrics do not
    exist yet, so this is logging alone). "formatting one record" is the two formatters
    alone; the server CPU and the log lines per turn say what was paid for (the flood filter,
    ``observability.logrepeat``, lets ~21 lines of a kind a minute through under load). Both servers
    bind turn ids (contextvars) in either format: that part is on both sides.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from pathlib import Path

import httpx
from openai import AsyncOpenAI

from bench.http.rig import (
    LIMITS,
    QUESTION,
    ChildServer,
    Errors,
    FakeModel,
    agent_for,
    create_sessions,
    ms,
    sync_turn,
    write_workspace,
)
from bench.rigs.process import cpu_seconds
from bench.rigs.table import pct, row
from duragent.observability.jsonlog import JsonFormatter
from duragent.observability.logctx import log_context

__all__ = ["openai_sections"]


def _chat(i: int, key: str) -> dict[str, object]:
    return {
        "model": "bot",
        "messages": [{"role": "user", "content": QUESTION.format(i=i)}],
        "session_id": key,
    }


async def _completions(http: httpx.AsyncClient, key: str, i: int, errs: Errors) -> float | None:
    start = time.perf_counter()
    try:
        r = await http.post("/v1/chat/completions", json=_chat(i, key))
    except httpx.HTTPError as exc:
        errs.add(type(exc).__name__, repr(exc))
        return None
    if r.status_code != 200:
        errs.add(f"HTTP {r.status_code}", r.text)
        return None
    return time.perf_counter() - start


async def _sdk(client: AsyncOpenAI, key: str, i: int, errs: Errors) -> float | None:
    start = time.perf_counter()
    try:
        await client.chat.completions.create(
            model="bot",
            messages=[{"role": "user", "content": QUESTION.format(i=i)}],
            extra_body={"session_id": key},
        )
    except Exception as exc:  # counted, not raised: a benchmark reports its errors
        errs.add(type(exc).__name__, repr(exc))
        return None
    return time.perf_counter() - start


async def _sdk_stream(
    client: AsyncOpenAI, key: str, i: int, errs: Errors
) -> tuple[float, float] | None:
    start = time.perf_counter()
    first: float | None = None
    try:
        stream = await client.chat.completions.create(
            model="bot",
            messages=[{"role": "user", "content": QUESTION.format(i=i)}],
            extra_body={"session_id": key},
            stream=True,
        )
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - start
    except Exception as exc:  # counted, not raised
        errs.add(type(exc).__name__, repr(exc))
        return None
    if first is None:
        errs.add("stream without content", "")
        return None
    return first, time.perf_counter() - start


async def openai_path(base: Path, quick: bool) -> None:
    """(h) one client, four ways, round-robin; then 50 SDK clients at once."""
    n = 40 if quick else 300
    errs = Errors()
    ways: dict[str, list[float]] = {"native": [], "completions": [], "sdk": [], "stream": []}
    ttft: list[float] = []
    with (base / "openai.log").open("wb") as log:
        server = ChildServer(write_workspace(base / "openai"), log)
        await server.start()
        try:
            async with (
                httpx.AsyncClient(base_url=server.base_url, timeout=60) as http,
                AsyncOpenAI(
                    base_url=server.base_url + "/v1", api_key="unused", max_retries=0
                ) as sdk,
            ):
                (sid,) = await create_sessions(http, 1)
                for i in range(-5, n):  # five unmeasured warm-up rounds
                    native = await sync_turn(http, sid, i, errs)
                    raw = await _completions(http, "bench-raw", i, errs)
                    via_sdk = await _sdk(sdk, "bench-sdk", i, errs)
                    streamed = await _sdk_stream(sdk, "bench-stream", i, errs)
                    if i < 0:
                        continue
                    for name, value in (("native", native), ("completions", raw)):
                        if value is not None:
                            ways[name].append(value)
                    if via_sdk is not None:
                        ways["sdk"].append(via_sdk)
                    if streamed is not None:
                        ttft.append(streamed[0])
                        ways["stream"].append(streamed[1])
                _report(ways, ttft)
                await _many(server, 10 if quick else 50, 3 if quick else 10, errs)
        finally:
            await server.stop()
    row("(h) errors", errs.describe(), "0", errs.total == 0)


def _report(ways: dict[str, list[float]], ttft: list[float]) -> None:
    labels = {
        "native": "POST /api/v1/sessions/{id}/messages",
        "completions": "POST /v1/chat/completions (httpx)",
        "sdk": "openai SDK chat.completions.create",
        "stream": "openai SDK, stream=True, to [DONE]",
    }
    for name, label in labels.items():
        if ways[name]:
            row(f"(h) {label}, p50", ms(pct(ways[name], 0.5)))
    if ttft:
        row("(h) openai SDK, stream=True, first content chunk p50", ms(pct(ttft, 0.5)))
    if ways["native"] and ways["completions"]:
        ratio = statistics.median(ways["completions"]) / statistics.median(ways["native"])
        row("(h) OpenAI path overhead (completions / native p50)", f"{ratio:.2f}x")


async def _many(server: ChildServer, clients: int, per: int, errs: Errors) -> None:
    times: list[float] = []

    async def client(c: int) -> None:
        async with AsyncOpenAI(
            base_url=server.base_url + "/v1", api_key="unused", max_retries=0
        ) as sdk:
            for i in range(-1, per):
                took = await _sdk(sdk, f"many-{c}", i, errs)
                if took is not None and i >= 0:
                    times.append(took)

    start = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    wall = time.perf_counter() - start
    if times:
        row(f"(h) openai SDK, {clients} clients at once: turns/s", f"{len(times) / wall:,.0f}/s")
        row(
            f"(h) openai SDK, {clients} clients at once: p50 / p99",
            f"{ms(pct(times, 0.5))} / {ms(pct(times, 0.99))}",
        )


async def logging_cost(
    base: Path, quick: bool, level: str, args: tuple[str, ...], agent: str
) -> None:
    """(i) text vs json at one level: two servers, turns alternating between them."""
    n = 60 if quick else 400
    servers: dict[str, ChildServer] = {}
    logs = {fmt: (base / f"log-{level}-{fmt}.log").open("wb") for fmt in ("text", "json")}
    errs = Errors()
    times: dict[str, list[float]] = {"text": [], "json": []}
    ratios: list[float] = []  # json / text of each adjacent pair: drift cancels out
    cpu: dict[str, float] = {}
    try:
        for fmt, log in logs.items():
            config = write_workspace(base / f"log-{level}-{fmt}", agent)
            servers[fmt] = ChildServer(config, log, env={"DURAGENT_LOG_FORMAT": fmt}, args=args)
            await servers[fmt].start()
        clients = {
            fmt: httpx.AsyncClient(base_url=s.base_url, timeout=60, limits=LIMITS)
            for fmt, s in servers.items()
        }
        try:
            sids = {fmt: (await create_sessions(c, 1))[0] for fmt, c in clients.items()}
            for i in range(-5, 0):
                for fmt in servers:
                    await sync_turn(clients[fmt], sids[fmt], i, errs)
            lines0 = {fmt: _lines(base / f"log-{level}-{fmt}.log") for fmt in servers}
            cpu0 = {fmt: cpu_seconds(s.pid) for fmt, s in servers.items()}
            for i in range(n):
                order = ("text", "json") if i % 2 == 0 else ("json", "text")
                pair: dict[str, float] = {}
                for fmt in order:
                    took = await sync_turn(clients[fmt], sids[fmt], i, errs)
                    if took is not None:
                        times[fmt].append(took)
                        pair[fmt] = took
                if len(pair) == 2:
                    ratios.append(pair["json"] / pair["text"])
            cpu = {fmt: (cpu_seconds(s.pid) - cpu0[fmt]) / n for fmt, s in servers.items()}
            for log in logs.values():
                log.flush()
            per_turn = {
                fmt: (_lines(base / f"log-{level}-{fmt}.log") - lines0[fmt]) / n for fmt in servers
            }
        finally:
            for c in clients.values():
                await c.aclose()
    finally:
        for s in servers.values():
            await s.stop()
        for log in logs.values():
            log.close()
    text, json_ = statistics.median(times["text"]), statistics.median(times["json"])
    cost = statistics.median(ratios) - 1
    row(f"(i) {level}: sync turn p50 text / json", f"{ms(text)} / {ms(json_)}")
    row(
        f"(i) {level}: JSON logging cost on a turn",
        f"{cost * 100:+.1f} %",
        "<= 5 %",
        cost <= 0.05 if level == "INFO" else None,
    )
    row(
        f"(i) {level}: server CPU per turn text / json",
        f"{cpu['text'] * 1e3:.2f} / {cpu['json'] * 1e3:.2f} ms",
    )
    row(
        f"(i) {level}: log lines per turn text / json",
        f"{per_turn['text']:.1f} / {per_turn['json']:.1f}",
    )
    if errs.total:
        row(f"(i) {level}: errors", errs.describe(), "0", False)


def format_cost() -> None:
    """(i) what writing one line costs: the text format against the JSON one (in-process)."""
    text = logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
    as_json = JsonFormatter()
    record = logging.LogRecord(
        "httpx2", logging.INFO, __file__, 1, "HTTP Request: %s %s", ("POST", "/v1/x"), None
    )
    n = 20_000
    timings = {}
    with log_context(session_id="session_x", agent="bot", front_end="http", turn_id="turn_x"):
        for name, formatter in (("text", text), ("json", as_json)):
            start = time.perf_counter()
            for _ in range(n):
                formatter.format(record)
            timings[name] = (time.perf_counter() - start) / n
    row(
        "(i) formatting one record text / json",
        f"{timings['text'] * 1e6:.1f} / {timings['json'] * 1e6:.1f} µs",
    )


def _lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


async def openai_sections(base: Path, quick: bool) -> None:
    """(h) and (i)."""
    await openai_path(base, quick)
    format_cost()
    with (base / "model.log").open("wb") as log:
        model = FakeModel(log)
        await model.start()
        try:
            agent = agent_for("openai", model.base_url)
            await logging_cost(base, quick, "INFO", (), agent)
            await logging_cost(base, quick, "DEBUG", ("-vv",), agent)
        finally:
            await model.stop()
