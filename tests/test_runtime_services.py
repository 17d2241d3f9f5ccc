"""The runtime is one list of services: started in order, stopped in reverse, failures named."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from duragent.config import load_workspace
from duragent.lifecycle.services import Entry, Hooks, ServiceStartError, ServiceStopError
from duragent.runtime import Runtime


class FailingGateway:
    """A chat front end whose platform cannot be reached."""

    async def start(self) -> None:
        raise ConnectionError("api.telegram.org unreachable")

    async def stop(self) -> None:  # never called: it did not start
        raise AssertionError("a service that did not start is not stopped")


def with_entry(extra: Entry[Runtime]) -> type[Runtime]:
    """A runtime with one more entry just before HTTP: how a new front end is added."""

    class Extended(Runtime):
        SERVICES: ClassVar[tuple[Entry[Runtime], ...]] = (
            *Runtime.SERVICES[:-1],
            extra,
            Runtime.SERVICES[-1],
        )

    return Extended


def test_the_runtime_lists_its_services_in_start_order() -> None:
    assert [e.name for e in Runtime.SERVICES] == [
        "workspace-lock",
        "interpreter",
        "sandbox",
        "agents",
        "providers",
        "sessions",
        "background-tasks",
        "ttl-sweep",
        "provider-warmup",
        "ephemeral",
        "chat-relay",
        "telegram",
        "discord",
        "external-gateways",
        "scheduler",
        "processes",
        "http",
    ]
    optional = [e.name for e in Runtime.SERVICES if not e.essential]
    assert optional == [
        "ttl-sweep",
        "provider-warmup",
        "telegram",
        "discord",
        "external-gateways",
        "scheduler",
        "processes",
    ]


async def test_a_busy_port_names_the_http_service_and_releases_the_workspace(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("alpha")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        runtime = Runtime(load_workspace(tmp_path), port=port)
        with pytest.raises(ServiceStartError) as caught:
            await runtime.start()
    assert caught.value.service == "http"
    assert str(caught.value).startswith(f"cannot listen on 127.0.0.1:{port}")
    assert "service 'http' did not start" in str(caught.value)
    # Everything started before HTTP was stopped again: the lock is free for the next server.
    again = Runtime(load_workspace(tmp_path), port=0)
    await again.start()
    await again.aclose()


async def test_an_optional_front_end_that_fails_is_logged_by_name_and_http_keeps_serving(
    tmp_path: Path, write_agent: Callable[..., Path], caplog: pytest.LogCaptureFixture
) -> None:
    write_agent("alpha")
    extended = with_entry(Entry("telegram", lambda _: FailingGateway(), essential=False))
    runtime = extended(load_workspace(tmp_path), port=0)
    with caplog.at_level(logging.ERROR):
        await runtime.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}") as client:
            assert (await client.get("/livez")).text == "ok"
    finally:
        await runtime.aclose()
    assert "service telegram did not start: api.telegram.org unreachable" in caplog.text


async def test_a_service_failing_to_stop_is_named_and_the_others_still_stop(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("alpha")
    stopped: list[str] = []

    async def broken_stop() -> None:
        stopped.append("gateway")
        raise RuntimeError("socket already closed")

    extended = with_entry(Entry("gateway", lambda _: Hooks(stop=broken_stop), essential=False))
    runtime = extended(load_workspace(tmp_path), port=0)
    await runtime.start()
    with pytest.raises(ServiceStopError, match="service 'gateway': RuntimeError: socket"):
        await runtime.aclose()
    assert stopped == ["gateway"]
    assert runtime.http_port is None  # HTTP stopped before it (reverse order)
    again = Runtime(load_workspace(tmp_path), port=0)  # and the lock after it
    await again.start()
    await again.aclose()


async def test_stop_cancels_the_background_tasks_after_http_and_before_the_sessions_close(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("alpha")
    runtime = Runtime(load_workspace(tmp_path), port=0)
    await runtime.start()
    seen: list[object] = []

    async def turn_left_running() -> None:
        try:
            await asyncio.sleep(3600)
        finally:  # its clean-up still finds the sessions open
            seen.append(runtime.http_port)
            seen.append(await runtime.turns.start_session("alpha"))

    task = runtime.tasks.spawn(turn_left_running(), name="turn-after-408")
    await asyncio.sleep(0)
    await runtime.aclose()
    assert task.cancelled()
    assert len(runtime.tasks) == 0
    http_port, session_id = seen
    assert http_port is None  # HTTP had stopped
    assert (tmp_path / ".duragent" / "sessions" / str(session_id)).is_dir()
