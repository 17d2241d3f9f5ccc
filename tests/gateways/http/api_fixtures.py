"""A real Runtime (uvicorn on 127.0.0.1) whose agent talks to the scripted model."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.session.ops import Op
from duragent.testing import ScriptedLLMServer


@dataclass
class Served:
    runtime: Runtime
    client: httpx.AsyncClient
    server: ScriptedLLMServer
    root: Path


def write_workspace(
    root: Path,
    base_url: str,
    *,
    server_yaml: str = "",
    on_disconnect: str = "pause",
    tools: str = "",
    policy: str = "",
) -> None:
    (root / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n" + server_yaml)
    agent = root / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(
        textwrap.dedent(
            f"""\
            apiVersion: duragent/v1alpha1
            kind: Agent
            metadata:
              name: bot
              description: test bot
            spec:
              model:
                provider: fake
                name: gpt-4o
                base_url: {base_url}
                max_input_tokens: 16000
                max_output_tokens: 500
              session:
                on_disconnect: {on_disconnect}
                llm_timeout_seconds: 20
            """
        )
        + tools
    )
    if policy:
        (agent / "policy.yaml").write_text(policy)


@asynccontextmanager
async def served(
    root: Path, *, token: str | None = None, **workspace: str
) -> AsyncIterator[Served]:
    async with ScriptedLLMServer() as llm:
        write_workspace(root, llm.openai_base_url, **workspace)
        runtime = Runtime(load_workspace(root), port=0)
        await runtime.start()
        headers = {"authorization": f"Bearer {token}"} if token else {}
        try:
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{runtime.http_port}", headers=headers, timeout=120
            ) as client:
                yield Served(runtime, client, llm, root)
        finally:
            await runtime.aclose()


def counted_asks(registry: Any) -> list[Op[Any, ..., Any]]:
    """Every ask of a session actor from now on, in order, by operation (a turn's round trips)."""
    asks: list[Op[Any, ..., Any]] = []
    call = registry.call

    async def counting(session_id: str, op: Op[Any, ..., Any], *args: Any, **kw: Any) -> Any:
        asks.append(op)
        return await call(session_id, op, *args, **kw)

    registry.call = counting
    return asks
