"""A refused or dropped connection is reported as a connection error, a silent server as a timeout.

The providers talk through the SDKs' aiohttp transport, whose exception table turns every
aiohttp connection error into a "connect timeout"; the user must still read what happened.
These servers are real sockets: nothing listening, one that hangs up, one that never answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from duragent.errors import LLMConnectionError, LLMError, LLMTimeoutError
from duragent.llm.anthropic_provider import AnthropicProvider
from duragent.llm.base import LLMProvider
from duragent.llm.openai_compat import OpenAICompatibleProvider
from tests.llm.helpers import HELLO

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def provider_for(kind: str, port: int) -> LLMProvider:
    if kind == "openai":
        return OpenAICompatibleProvider(
            name="openai",
            model="m",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="k",
            timeout_seconds=1,
        )
    return AnthropicProvider(
        model="m", api_key="k", base_url=f"http://127.0.0.1:{port}", timeout_seconds=1
    )


async def failure_of(provider: LLMProvider, streamed: bool) -> LLMError:
    try:
        if streamed:
            async for _ in provider.stream(HELLO):
                pass
        else:
            await provider.complete(HELLO)
    except LLMError as exc:
        return exc
    finally:
        await provider.aclose()
    raise AssertionError("the call succeeded")


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def serving(handler: Handler) -> AsyncIterator[int]:
    """A TCP server running ``handler`` per connection; every connection is closed after."""
    writers: list[asyncio.StreamWriter] = []

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await handler(reader, writer)

    server = await asyncio.start_server(tracked, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]
    for writer in writers:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(1)
    writer.close()


async def say_nothing(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
    await reader.read(1)  # and never answer (closed by ``serving`` once the test is done)


KINDS = ["openai", "anthropic"]
MODES = [pytest.param(False, id="complete"), pytest.param(True, id="stream")]


@pytest.mark.parametrize("streamed", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_refused_connection_is_a_connection_error_not_a_timeout(
    kind: str, streamed: bool
) -> None:
    error = await failure_of(provider_for(kind, unused_port()), streamed)
    assert type(error) is LLMConnectionError
    assert "timed out" not in str(error)
    assert "connect" in str(error).lower()


@pytest.mark.parametrize("streamed", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_that_hangs_up_is_a_connection_error(kind: str, streamed: bool) -> None:
    async for port in serving(hang_up):
        error = await failure_of(provider_for(kind, port), streamed)
        assert type(error) is LLMConnectionError
        assert "disconnected" in str(error).lower()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_that_never_answers_is_a_timeout(kind: str) -> None:
    async for port in serving(say_nothing):
        error = await failure_of(provider_for(kind, port), streamed=False)
        assert type(error) is LLMTimeoutError
