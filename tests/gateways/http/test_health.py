"""Health, version and agent endpoints over a real uvicorn socket."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from duragent import __version__
from duragent.config import load_workspace
from duragent.runtime import Runtime


@pytest.fixture
async def served(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> AsyncIterator[tuple[Runtime, httpx.AsyncClient]]:
    write_agent("alpha", SYSTEM_PROMPT_md="Be brief.")
    (tmp_path / ".duragent/agents/alpha/agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: alpha\n"
        "  description: First\n  version: '1.2'\n  labels: {team: core}\nspec:\n  model:\n"
        "    provider: offline\n    name: duragent-offline\n    max_input_tokens: 8192\n"
        "  system_prompt: ./SYSTEM_PROMPT_md\n"
    )
    write_agent("beta")
    broken = write_agent("broken")
    (broken / "agent.yaml").write_text("kind: Agent\n")
    runtime = Runtime(load_workspace(tmp_path), port=0)
    await runtime.start()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}") as client:
        yield runtime, client
    await runtime.aclose()


async def test_livez_readyz_and_version(served: tuple[Runtime, httpx.AsyncClient]) -> None:
    runtime, client = served
    assert (await client.get("/livez")).text == "ok"
    ready = (await client.get("/readyz")).json()
    assert ready == {
        "status": "ok",
        "workspace_hash": runtime.workspace_hash,
        "pid": os.getpid(),
        "storage": {"kind": "files", "writable": True},
    }
    version = (await client.get("/version")).json()
    assert version["version"] == __version__


async def test_agents_are_listed_and_a_broken_one_does_not_hide_them(
    served: tuple[Runtime, httpx.AsyncClient],
) -> None:
    _, client = served
    agents = (await client.get("/api/v1/agents")).json()["agents"]
    assert agents == [
        {"name": "alpha", "description": "First", "version": "1.2"},
        {"name": "beta"},
    ]


async def test_agent_detail_has_the_reference_shape(
    served: tuple[Runtime, httpx.AsyncClient],
) -> None:
    _, client = served
    detail = (await client.get("/api/v1/agents/alpha")).json()
    assert detail == {
        "api_version": "duragent/v1alpha1",
        "kind": "Agent",
        "metadata": {
            "name": "alpha",
            "description": "First",
            "version": "1.2",
            "labels": {"team": "core"},
        },
        "spec": {
            "model": {"provider": "offline", "name": "duragent-offline", "max_input_tokens": 8192},
            "system_prompt": "Be brief.",
        },
    }


async def test_unknown_agents_and_paths_are_problem_json(
    served: tuple[Runtime, httpx.AsyncClient],
) -> None:
    _, client = served
    missing = await client.get("/api/v1/agents/ghost")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json() == {
        "type": "urn:duragent:problem:not-found",
        "title": "Not Found",
        "status": 404,
        "detail": "agent 'ghost' not found",
        "instance": "/api/v1/agents/ghost",
    }
    nowhere = await client.get("/api/v1/nowhere")
    assert nowhere.status_code == 404
    assert nowhere.headers["content-type"] == "application/problem+json"
