"""The service stack starts a list in order, stops it in reverse, and names whoever fails."""

from __future__ import annotations

import asyncio
import logging

import pytest

from duragent.lifecycle.services import (
    Entry,
    Hooks,
    Service,
    ServiceStack,
    ServiceStartError,
    ServiceStopError,
    TaskService,
)


class Recorder:
    """A service that writes what happens to it into a shared journal."""

    def __init__(
        self, name: str, journal: list[str], *, fail_start: bool = False, fail_stop: bool = False
    ) -> None:
        self.name = name
        self.journal = journal
        self.fail_start = fail_start
        self.fail_stop = fail_stop

    async def start(self) -> None:
        if self.fail_start:
            raise OSError(f"{self.name} cannot bind")
        self.journal.append(f"start {self.name}")

    async def stop(self) -> None:
        self.journal.append(f"stop {self.name}")
        if self.fail_stop:
            raise RuntimeError(f"{self.name} broke while stopping")


def entry(name: str, journal: list[str], *, essential: bool = True, **fails: bool) -> Entry[None]:
    return Entry(name, lambda _: Recorder(name, journal, **fails), essential=essential)


async def test_services_start_in_list_order_and_stop_in_reverse() -> None:
    journal: list[str] = []
    stack = ServiceStack()
    await stack.start([entry(n, journal) for n in ("lock", "sessions", "http")], None)
    assert stack.names == ["lock", "sessions", "http"]
    assert await stack.stop() == []
    assert journal == [
        "start lock",
        "start sessions",
        "start http",
        "stop http",
        "stop sessions",
        "stop lock",
    ]
    assert stack.names == []


async def test_an_essential_service_that_fails_is_named_and_the_started_ones_are_stopped() -> None:
    journal: list[str] = []
    stack = ServiceStack()
    entries = [
        entry("lock", journal),
        entry("sessions", journal),
        entry("http", journal, fail_start=True),
        entry("never", journal),
    ]
    with pytest.raises(ServiceStartError) as caught:
        await stack.start(entries, None)
    assert caught.value.service == "http"
    assert str(caught.value) == "http cannot bind (service 'http' did not start)"
    assert isinstance(caught.value.__cause__, OSError)
    assert journal == ["start lock", "start sessions", "stop sessions", "stop lock"]


async def test_an_unexpected_cause_keeps_its_type_in_the_message() -> None:
    def broken(_: None) -> Service:
        raise KeyError("token")

    with pytest.raises(ServiceStartError, match=r"^KeyError: 'token' \(service 'bot' did not"):
        await ServiceStack().start([Entry("bot", broken)], None)


async def test_an_optional_service_that_fails_is_logged_by_name_and_the_rest_keep_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    journal: list[str] = []
    stack = ServiceStack()
    entries = [
        entry("sessions", journal),
        entry("telegram", journal, essential=False, fail_start=True),
        entry("http", journal),
    ]
    with caplog.at_level(logging.ERROR, logger="duragent.lifecycle.services"):
        await stack.start(entries, None)
    assert stack.names == ["sessions", "http"]
    assert "service telegram did not start: telegram cannot bind" in caplog.text
    await stack.stop()
    assert journal == ["start sessions", "start http", "stop http", "stop sessions"]


async def test_an_entry_its_configuration_does_not_ask_for_is_skipped() -> None:
    stack = ServiceStack()
    await stack.start([Entry[None]("discord", lambda _: None)], None)
    assert stack.names == []


async def test_a_failing_stop_does_not_prevent_the_others_from_stopping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    journal: list[str] = []
    stack = ServiceStack()
    entries = [
        entry("lock", journal),
        entry("sessions", journal, fail_stop=True),
        entry("http", journal, fail_stop=True),
    ]
    await stack.start(entries, None)
    with caplog.at_level(logging.ERROR, logger="duragent.lifecycle.services"):
        failures = await stack.stop()
    assert journal[-3:] == ["stop http", "stop sessions", "stop lock"]
    assert [name for name, _ in failures] == ["http", "sessions"]
    assert "service sessions did not stop cleanly: RuntimeError" in caplog.text
    message = str(ServiceStopError(failures))
    assert "service 'http': RuntimeError: http broke while stopping" in message
    assert "service 'sessions'" in message


async def test_hooks_run_their_functions() -> None:
    journal: list[str] = []

    async def opened() -> None:
        journal.append("open")

    async def closed() -> None:
        journal.append("close")

    hooks = Hooks(opened, closed)
    await hooks.start()
    await hooks.stop()
    await Hooks().start()  # no function: nothing to do
    assert journal == ["open", "close"]


async def test_a_task_service_runs_until_stopped_and_stop_cancels_it() -> None:
    ticks: list[int] = []

    async def loop() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.001)

    service = TaskService("sweep", loop)
    await service.start()
    await asyncio.sleep(0.02)
    await service.stop()
    count = len(ticks)
    await asyncio.sleep(0.02)
    assert count > 0
    assert len(ticks) == count  # cancelled: no tick after stop


async def test_a_task_service_that_fails_is_logged_with_its_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def warm() -> None:
        raise ConnectionError("provider unreachable")

    service = TaskService("provider-warmup", warm)
    with caplog.at_level(logging.ERROR, logger="duragent.lifecycle.services"):
        await service.start()
        await asyncio.sleep(0.01)
        await service.stop()  # does not raise the task's failure
    assert "provider-warmup failed: provider unreachable" in caplog.text
