"""``serve --log-format json``: a real server process whose every log line is one JSON object."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx

from duragent.testing import Reply, ScriptedLLMServer
from tests.cli.test_serve import free_port
from tests.gateways.http.api_fixtures import write_workspace
from tests.polling import until_ready


async def serve_and_talk(
    root: Path, *args: str, env: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "duragent", *args, "serve", "-c", str(root / "duragent.yaml"),
        "--port", str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **env},
    )  # fmt: skip
    turns: dict[str, str] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        await until_ready(base, path="/livez", alive=lambda: proc.returncode is None)
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            sid = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()
            reply = await client.post(
                f"/api/v1/sessions/{sid['session_id']}/messages", json={"content": "hi"}
            )
            turns["http"] = reply.headers["x-duragent-turn"]
            done = await client.post(
                "/v1/chat/completions",
                json={"model": "bot", "messages": [{"role": "user", "content": "hey"}]},
            )
            turns["openai"] = done.headers["x-duragent-turn"]
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return out.decode().splitlines(), turns


async def test_every_line_is_json_and_a_turn_can_be_followed_by_its_id(tmp_path: Path) -> None:
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url)
        llm.enqueue(Reply(text="one"))
        llm.enqueue(Reply(text="two"))
        lines, turns = await serve_and_talk(tmp_path, "-vv", env={"DURAGENT_LOG_FORMAT": "json"})
    records: list[dict[str, Any]] = [json.loads(line) for line in lines]  # every line parses
    assert records
    for record in records:
        assert {"timestamp", "level", "logger", "message"} <= set(record)
        assert record["timestamp"].endswith("Z")
    for front_end, turn_id in turns.items():
        mine = [r for r in records if r.get("turn_id") == turn_id]
        assert mine, f"no line carries the {front_end} turn {turn_id}"
        assert {r["front_end"] for r in mine} == {front_end}
        assert {r["agent"] for r in mine} == {"bot"}
        assert len({r["session_id"] for r in mine}) == 1
        # The model call of the turn carries it too (the provider's line, at -vv).
        assert any(r["logger"].startswith("duragent.llm") for r in mine), mine


async def test_text_stays_the_default(tmp_path: Path) -> None:
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url)
        llm.enqueue(Reply(text="one"))
        llm.enqueue(Reply(text="two"))
        lines, _ = await serve_and_talk(tmp_path, env={"DURAGENT_LOG_FORMAT": ""})
    assert lines
    assert not any(line.startswith("{") for line in lines)


def test_an_unknown_format_is_refused_naming_the_choices() -> None:
    from typer.testing import CliRunner

    from duragent.cli.main import app

    result = CliRunner().invoke(app, ["serve", "--log-format", "xml"])
    assert result.exit_code == 2
    assert "xml" in result.output
    assert "json" in result.output


def test_json_mode_switches_only_the_clis_handlers_and_takes_python_warnings_in() -> None:
    import io
    import logging
    import warnings

    from duragent.cli import logformat
    from duragent.cli.logformat import LogFormat, remember_handlers, use_log_format

    ours, theirs = io.StringIO(), io.StringIO()
    cli_handler, host_handler = logging.StreamHandler(ours), logging.StreamHandler(theirs)
    host_handler.setFormatter(logging.Formatter("host: %(message)s"))
    root = logging.getLogger()
    root.addHandler(cli_handler)
    root.addHandler(host_handler)
    remember_handlers([cli_handler])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            use_log_format(LogFormat.JSON)
            logging.getLogger("duragent.test").warning("hello")
            warnings.warn("an old API", DeprecationWarning, stacklevel=1)
            use_log_format(LogFormat.TEXT)
            logging.getLogger("duragent.test").warning("back to text")
    finally:
        root.removeHandler(cli_handler)
        root.removeHandler(host_handler)
        logformat._own.remove(cli_handler)  # the module keeps the CLI's handlers for life
    first, second, third = ours.getvalue().splitlines()
    assert json.loads(first)["message"] == "hello"
    assert json.loads(second)["logger"] == "py.warnings"
    assert "an old API" in json.loads(second)["message"]
    assert third == "back to text"
    assert theirs.getvalue().startswith("host: hello")
