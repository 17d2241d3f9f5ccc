"""`duragent chat` as a real subprocess: it starts the server, streams, approves, resets."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import httpx

from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from tests.gateways.http.api_fixtures import write_workspace


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def run_cli(*args: str, stdin: str, cwd: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "duragent",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_chat_starts_a_server_streams_replies_and_handles_commands(tmp_path: Path) -> None:
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
            Reply(text="Hello from the model"),
            Reply(
                tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo approved-run"})]
            ),
            Reply(text="The command printed approved-run."),
        )
        try:
            code, out, err = await run_cli(
                "chat",
                "--agent",
                "bot",
                "-c",
                str(tmp_path / "duragent.yaml"),
                stdin="hi\nrun something\ny\n/status\n/reset\n/exit\n",
                cwd=tmp_path,
            )
        finally:
            async with httpx.AsyncClient() as client:
                await client.post(f"http://127.0.0.1:{port}/api/admin/v1/shutdown")
    assert code == 0, err
    assert "bot> Hello from the model" in out
    assert "→ bash" in out
    assert "approve `echo approved-run`?" in out
    assert "approved-run" in out
    assert "The command printed approved-run." in out
    assert "Status: active" in out
    assert "new session session_" in out
    assert (tmp_path / ".duragent" / "logs" / f"server-{port}.log").exists()


async def test_session_commands_list_show_and_delete(tmp_path: Path) -> None:
    port = free_port()
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, server_yaml=f"  port: {port}\n")
        llm.enqueue(Reply(text="noted"))
        config = str(tmp_path / "duragent.yaml")
        try:
            code, _, err = await run_cli(
                "chat", "--agent", "bot", "-c", config, stdin="remember this\n", cwd=tmp_path
            )
            assert code == 0, err
            code, listing, err = await run_cli(
                "session", "list", "-c", config, stdin="", cwd=tmp_path
            )
            assert code == 0, err
            sid = next(w for w in listing.split() if w.startswith("session_"))
            code, shown, err = await run_cli(
                "session", "show", sid, "-c", config, stdin="", cwd=tmp_path
            )
            assert "user> remember this" in shown
            assert "assistant> noted" in shown
            assert "at most" not in err
            code, shown, err = await run_cli(
                "session", "show", sid, "-n", "50000", "-c", config, stdin="", cwd=tmp_path
            )
            assert code == 0, err
            assert "the server shows at most 10000 messages" in err
            assert "user> remember this" in shown
            code, listed, err = await run_cli(
                "attach", "--list", "-c", config, stdin="", cwd=tmp_path
            )
            assert code == 0, err
            assert sid in listed
            code, attached, err = await run_cli(
                "attach", sid, "-c", config, stdin="/status\n/exit\n", cwd=tmp_path
            )
            assert code == 0, err
            assert "you> remember this" in attached
            assert "bot> noted" in attached
            assert f"Session: {sid}" in attached
            code, deleted, err = await run_cli(
                "session", "delete", sid, "-c", config, stdin="", cwd=tmp_path
            )
            assert deleted.strip() == f"deleted {sid}"
            code, _, err = await run_cli(
                "session", "show", sid, "-c", config, stdin="", cwd=tmp_path
            )
            assert code == 1
            assert "error: 404: session not found" in err
        finally:
            async with httpx.AsyncClient() as client:
                await client.post(f"http://127.0.0.1:{port}/api/admin/v1/shutdown")
