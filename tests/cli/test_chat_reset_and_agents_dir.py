"""``/reset`` in ``chat`` ends the old session; ``--agents-dir`` reaches the server it starts."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx

from duragent.testing import Reply, ScriptedLLMServer
from tests.cli.test_chat import free_port, run_cli
from tests.gateways.http.api_fixtures import write_workspace


async def _shutdown(port: int) -> None:
    async with httpx.AsyncClient() as client:
        await client.post(f"http://127.0.0.1:{port}/api/admin/v1/shutdown")


async def test_reset_ends_the_old_session_and_starts_a_new_one(tmp_path: Path) -> None:
    port = free_port()
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, server_yaml=f"  port: {port}\n")
        llm.enqueue(Reply(text="first answer"), Reply(text="second answer"))
        try:
            code, out, err = await run_cli(
                "chat",
                "-a",
                "bot",
                "-c",
                str(tmp_path / "duragent.yaml"),
                stdin="hello\n/reset\nagain\n/exit\n",
                cwd=tmp_path,
            )
            assert code == 0, err
            match = re.search(r"ended session (session_\w+); new session (session_\w+)", out)
            assert match, out
            old, new = match.groups()
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                ended = (await client.get(f"/api/v1/sessions/{old}")).json()
                assert ended["status"] == "completed"
                assert (await client.get(f"/api/v1/sessions/{new}")).json()["status"] == "active"
                kept = (await client.get(f"/api/v1/sessions/{old}/messages")).json()["messages"]
                assert [m["content"] for m in kept] == ["hello", "first answer"]
                refused = await client.post(
                    f"/api/v1/sessions/{old}/messages", json={"content": "still there?"}
                )
                assert refused.status_code == 404
            assert "bot> second answer" in out
            code, _, err = await run_cli(
                "attach", old, "-c", str(tmp_path / "duragent.yaml"), stdin="", cwd=tmp_path
            )
            assert code == 1
            assert f"session {old} has ended (completed)" in err
        finally:
            await _shutdown(port)


async def test_chat_agents_dir_is_the_agents_folder_of_the_server_it_starts(
    tmp_path: Path,
) -> None:
    port = free_port()
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, server_yaml=f"  port: {port}\n")
        shutil.move(tmp_path / ".duragent" / "agents", tmp_path / "team")
        llm.enqueue(Reply(text="from the team folder"))
        config = str(tmp_path / "duragent.yaml")
        try:
            code, out, err = await run_cli(
                "chat",
                "-a",
                "bot",
                "-c",
                config,
                "--agents-dir",
                "team",
                stdin="hi\n",
                cwd=tmp_path,
            )
            assert code == 0, err
            assert "bot> from the team folder" in out
            code, _, err = await run_cli(
                "session", "list", "-c", config, "--agents-dir", "other", stdin="", cwd=tmp_path
            )
            assert code == 0, err
            assert "--agents-dir other applies only to a server started by this command" in err
        finally:
            await _shutdown(port)
