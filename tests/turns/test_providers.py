"""The provider pool: built off the loop, once per setting, warmed ahead of first messages."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from duragent.agents import Agent, load_catalog
from duragent.errors import LLMAuthError
from duragent.llm.retry import ResilientProvider
from duragent.turns.providers import ProviderPool
from tests.turns.turn_fixtures import agent_yaml


def agent_at(tmp_path: Path, yaml_text: str) -> Agent:
    folder = tmp_path / "agents" / "bot"
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(yaml_text)
    catalog = load_catalog(tmp_path / "agents")
    assert not catalog.broken, catalog.broken
    return catalog.get("bot")


OPENAI_AGENT = textwrap.dedent(
    """\
    apiVersion: duragent/v1alpha1
    kind: Agent
    metadata:
      name: bot
    spec:
      model:
        provider: openai
        name: gpt-4o
    """
)


async def test_concurrent_first_messages_share_one_provider(tmp_path: Path) -> None:
    agent = agent_at(tmp_path, agent_yaml("http://127.0.0.1:9/v1"))
    pool = ProviderPool(env={})
    providers = await asyncio.gather(*(pool.for_agent(agent) for _ in range(5)))
    assert all(p is providers[0] for p in providers)
    assert await pool.for_agent(agent) is providers[0]
    await pool.aclose()


async def test_the_server_idle_timeout_reaches_the_provider(tmp_path: Path) -> None:
    agent = agent_at(tmp_path, agent_yaml("http://127.0.0.1:9/v1"))
    pool = ProviderPool(env={}, idle_timeout_seconds=7)
    provider = await pool.for_agent(agent)
    assert isinstance(provider, ResilientProvider)
    assert provider.idle_seconds == 7
    await pool.aclose()


async def test_a_provider_that_cannot_be_built_fails_every_caller_and_is_not_kept(
    tmp_path: Path,
) -> None:
    agent = agent_at(tmp_path, OPENAI_AGENT)
    pool = ProviderPool(env={})
    results = await asyncio.gather(
        pool.for_agent(agent), pool.for_agent(agent), return_exceptions=True
    )
    assert all(isinstance(r, LLMAuthError) for r in results)
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY is not set"):
        await pool.for_agent(agent)
    await pool.warm([agent])  # warming skips it quietly: the turn reports it to its chat
    await pool.aclose()


async def test_a_caller_cancelled_mid_build_leaves_the_pool_usable(tmp_path: Path) -> None:
    agent = agent_at(tmp_path, agent_yaml("http://127.0.0.1:9/v1"))
    pool = ProviderPool(env={})
    first = asyncio.create_task(pool.for_agent(agent))
    await asyncio.sleep(0)  # the build has started in its worker thread
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert isinstance(await pool.for_agent(agent), ResilientProvider)
    await pool.aclose()


async def test_warming_builds_ahead_so_the_first_message_finds_its_provider(
    tmp_path: Path,
) -> None:
    agent = agent_at(tmp_path, agent_yaml("http://127.0.0.1:9/v1"))
    pool = ProviderPool(env={})
    await pool.warm([agent])
    lookup = pool.for_agent(agent)
    # no build left to wait for: the lookup finishes without ever suspending
    with pytest.raises(StopIteration) as done:
        lookup.send(None)
    assert isinstance(done.value.value, ResilientProvider)
    await pool.aclose()


async def test_the_pool_says_it_is_warming_until_every_build_has_finished(tmp_path: Path) -> None:
    good = agent_at(tmp_path / "good", agent_yaml("http://127.0.0.1:9/v1"))
    broken = agent_at(tmp_path / "broken", OPENAI_AGENT)  # no OPENAI_API_KEY in env={}
    pool = ProviderPool(env={})
    assert not pool.warming
    warm = asyncio.create_task(pool.warm([broken, good]))
    await asyncio.sleep(0)  # the builds run in a worker thread: warm() is waiting on them
    warming: bool = pool.warming  # (mypy: read after the await, not narrowed from above)
    assert warming
    await warm
    assert not pool.warming  # also after a build that failed
    await pool.aclose()
