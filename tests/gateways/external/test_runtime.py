"""``duragent serve`` with ``gateways.external[]``: the runtime starts each, one broken is not all.

A real ``Runtime`` on a tmp workspace whose ``duragent.yaml`` lists the fake gateway (through
a launcher script next to the config, so the command is resolved against the config file's
directory) and a gateway whose program does not exist.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing.gateway_control import GatewayControl, message
from tests.polling import eventually


def launcher(root: Path) -> None:
    script = root / "gateways" / "fake"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m duragent.testing.fake_gateway "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


async def test_each_external_gateway_serves_and_a_missing_program_fails_only_its_own(
    tmp_path: Path,
    write_agent: Callable[..., Path],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO)
    write_agent("assistant")
    launcher(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative commands start from duragent.yaml, not the cwd
    async with GatewayControl() as control:
        (tmp_path / "duragent.yaml").write_text(
            "gateways:\n"
            "  external:\n"
            "    - name: broken\n"
            "      command: ./no-such-gateway\n"
            "    - name: fake\n"
            "      command: gateways/fake\n"
            f"      args: [--control, '{control.path}']\n"
            "      env:\n"
            "        FAKE_PORT: 8080\n"
        )
        runtime = Runtime(load_workspace(tmp_path / "duragent.yaml"), port=0)
        await runtime.start()
        try:
            child = await control.child()
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}") as http:

                async def states() -> dict[str, Any]:
                    body: dict[str, Any] = (await http.get("/readyz")).json()
                    return dict(body.get("gateways", {}))

                assert await eventually(lambda: _running(states))
                gateways = await states()
            assert gateways["broken"].startswith("failed: gateways.external[0].command: ")
            await child.emit(message("42", "hello", message_id="m1", sender_id="42"))
            sent = await child.command("send_message")
            assert sent["chat_id"] == "42"
            assert sent["reply_to"] == "m1"
        finally:
            await runtime.aclose()
        assert child.of_type("shutdown") == [{"type": "shutdown"}]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("gateways.external[0].command" in e and "broken" in e for e in errors), errors
    assert os.getcwd() == str(elsewhere)


async def _running(states: Callable[[], Any]) -> bool:
    return bool((await states()).get("fake") == "running")
