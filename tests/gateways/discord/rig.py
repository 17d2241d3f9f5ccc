"""A real ``duragent serve`` with its Discord front end talking to the fake Discord server.

For what only the runtime shows: the gateway as one optional service (a rejected token or a
refused intent fails it while HTTP and other front ends keep serving, ``/readyz`` says why),
and the token kept out of every log. Conversations are tested on the gateway alone
(``discord_chat``), which starts faster: the runtime's gateway waits discord.py's full 2 s
for further guilds after READY.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import FakeDiscord, ScriptedLLMServer
from duragent.testing.discord_campaign import TOKEN
from tests.gateways.telegram.rig import agent_yaml, echo_reply

__all__ = ["TOKEN", "Rig", "discord_rig"]


@dataclass
class Rig:
    """The fake Discord, the scripted model, and the runtime serving between them."""

    dc: FakeDiscord
    llm: ScriptedLLMServer
    runtime: Runtime
    http: httpx.AsyncClient

    async def is_ready(self) -> bool:
        """``/readyz`` answers 200 (the model providers have loaded, storage is writable)."""
        return (await self.http.get("/readyz")).status_code == 200

    async def readyz(self) -> dict[str, Any]:
        body: dict[str, Any] = (await self.http.get("/readyz")).json()
        return body

    async def state(self) -> str:
        return str((await self.readyz())["gateways"]["discord"])


@asynccontextmanager
async def discord_rig(
    root: Path,
    *,
    token: str = TOKEN,
    fake_token: str | None = None,
    message_content_allowed: bool = True,
    extra_gateways: dict[str, Any] | None = None,
) -> AsyncIterator[Rig]:
    """Serve a workspace whose one agent ``bot`` answers on Discord (and ``extra_gateways``)."""
    async with (
        FakeDiscord(fake_token or token, message_content_allowed=message_content_allowed) as dc,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        gateways = {"discord": {"bot_token": token, "base_url": dc.url}, **(extra_gateways or {})}
        config = {"server": {"host": "127.0.0.1"}, "gateways": gateways}
        (root / "duragent.yaml").write_text(json.dumps(config))
        agent = root / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, None, []))
        runtime = Runtime(load_workspace(root), port=0)
        await runtime.start()
        http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}", timeout=120)
        try:
            yield Rig(dc, llm, runtime, http)
        finally:
            await http.aclose()
            await runtime.aclose()
