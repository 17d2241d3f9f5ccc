"""A real ``discord.Client`` connected to a fake Discord, for the fakes' own tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import discord

from duragent.gateways.discord.endpoints import use_api
from duragent.testing import FakeDiscord

__all__ = ["Listening", "connected_client"]


@dataclass
class Listening:
    """A connected discord.py client and the messages it received."""

    dc: FakeDiscord
    client: discord.Client
    received: asyncio.Queue[discord.Message]


@asynccontextmanager
async def connected_client(dc: FakeDiscord) -> AsyncIterator[Listening]:
    """discord.py logged in and ready on ``dc`` (a 429 over 30 s raises ``RateLimited``)."""
    restore = use_api(dc.url)
    intents = discord.Intents.default()
    intents.message_content = True
    client = discord.Client(intents=intents, guild_ready_timeout=0.01, max_ratelimit_timeout=30.0)
    received: asyncio.Queue[discord.Message] = asyncio.Queue()
    ready = asyncio.Event()

    @client.event
    async def on_ready() -> None:
        ready.set()

    @client.event
    async def on_message(message: discord.Message) -> None:
        await received.put(message)

    await client.login(dc.token)
    running = asyncio.create_task(client.connect(reconnect=False))
    try:
        await asyncio.wait_for(ready.wait(), 120)
        yield Listening(dc, client, received)
    finally:
        await client.close()
        await asyncio.wait_for(running, 120)
        restore()
