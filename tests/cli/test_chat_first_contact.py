"""`chat` and `session list` as a new user meets them (issue 21): --port, the started server's
whereabouts, approvals that ask again, whole session ids and JSON."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
from typer.testing import CliRunner

from duragent.cli.chat import line_reader
from duragent.cli.main import app
from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from tests.cli.test_chat import free_port, run_cli
from tests.gateways.http.api_fixtures import served, write_workspace

runner = CliRunner()


async def test_chat_port_starts_the_server_there_and_says_where_it_logs(tmp_path: Path) -> None:
    configured, asked = free_port(), free_port()
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, server_yaml=f"  port: {configured}\n")
        llm.enqueue(Reply(text="hello"))
        try:
            code, out, err = await run_cli(
                "chat",
                "-a",
                "bot",
                "--port",
                str(asked),
                "-c",
                str(tmp_path / "duragent.yaml"),
                stdin="hi\n/exit\n",
                cwd=tmp_path,
            )
        finally:
            async with httpx.AsyncClient() as client:
                await client.post(f"http://127.0.0.1:{asked}/api/admin/v1/shutdown")
    assert code == 0, err
    assert "bot> hello" in out
    log = tmp_path / ".duragent" / "logs" / f"server-{asked}.log"
    assert f"started a server for {tmp_path} on http://127.0.0.1:{asked}" in err
    assert f"it logs to {log}" in err
    assert "stops by itself after 300 s without sessions" in err


async def test_an_unclear_answer_to_an_approval_asks_again(tmp_path: Path) -> None:
    port = free_port()
    policy = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
    tools = "  tools:\n    - type: builtin\n      name: bash\n"
    async with ScriptedLLMServer() as llm:
        write_workspace(
            tmp_path,
            llm.openai_base_url,
            server_yaml=f"  port: {port}\n",
            tools=tools,
            policy=policy,
        )
        llm.enqueue(
            Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ran-it"})]),
            Reply(text="done"),
        )
        try:
            code, out, err = await run_cli(
                "chat",
                "-a",
                "bot",
                "-c",
                str(tmp_path / "duragent.yaml"),
                stdin="run it\n/status\ny\n/exit\n",
                cwd=tmp_path,
            )
        finally:
            async with httpx.AsyncClient() as client:
                await client.post(f"http://127.0.0.1:{port}/api/admin/v1/shutdown")
    assert code == 0, err
    assert "please answer y, a or n (got '/status')" in out
    assert out.count("approve `echo ran-it`?") == 2
    assert "bot> done" in out


async def test_session_list_prints_whole_ids_and_json_when_piped(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        created = [
            (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()
            for _ in range(2)
        ]
        url = str(s.client.base_url)
        table = await asyncio.to_thread(
            runner.invoke, app, ["session", "list", "-s", url], env={"COLUMNS": "80"}
        )
        as_json = await asyncio.to_thread(
            runner.invoke, app, ["session", "list", "-s", url, "--json"]
        )
    assert table.exit_code == 0, table.output
    for session in created:
        assert session["session_id"] in table.output
    assert as_json.exit_code == 0, as_json.output
    listed = json.loads(as_json.output)["sessions"]
    assert {x["session_id"] for x in listed} == {x["session_id"] for x in created}


def test_chat_on_a_terminal_reads_lines_with_editing_and_history() -> None:
    read = line_reader(interactive=True)
    assert read is input
    assert "readline" in sys.modules
