"""``GET /v1/models``: an agent's ``created`` is when its ``agent.yaml`` was last written."""

from __future__ import annotations

import os
from pathlib import Path

from openai import AsyncOpenAI

from tests.gateways.http.api_fixtures import served

WRITTEN = 1_700_000_000  # 2023-11-14T22:13:20Z


async def test_a_models_created_is_its_agent_files_time_in_the_list_and_alone(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        os.utime(tmp_path / ".duragent" / "agents" / "bot" / "agent.yaml", (WRITTEN, WRITTEN))
        url = f"http://127.0.0.1:{s.runtime.http_port}/v1"
        async with AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            listed = (await client.models.list()).data
            alone = await client.models.retrieve("bot")
    assert [(m.id, m.created) for m in listed] == [("bot", WRITTEN)]
    assert alone.created == WRITTEN
