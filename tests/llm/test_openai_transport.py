"""What ``OpenAICompatibleProvider`` does itself since it stopped posting through the SDK.

Each behaviour the SDK used to provide (headers, URL joining, error messages) is checked
against the real fake server over HTTP (spec ``202612050800.openai-transport.md``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from duragent.errors import LLMAuthError, LLMConnectionError, LLMRateLimitError, LLMServerError
from duragent.llm.openai_compat import OpenAICompatibleProvider
from duragent.testing import Fault, Reply, ScriptedLLMServer
from tests.llm.helpers import HELLO, OPENAI_MODEL, answer
from tests.llm.test_transport_errors import unused_port

SECRET = "sk-secret-never-shown"


def provider_at(base_url: str, api_key: str | None = "sk-test") -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        name="openai", model=OPENAI_MODEL, base_url=base_url, api_key=api_key, timeout_seconds=5
    )


@pytest.fixture
async def keyless(server: ScriptedLLMServer) -> AsyncIterator[OpenAICompatibleProvider]:
    provider = provider_at(server.openai_base_url, api_key=None)
    yield provider
    await provider.aclose()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_request_says_it_sends_and_accepts_json_and_names_duragent(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    server.enqueue(Reply(text="ok"))
    await answer(openai_provider, HELLO, stream=stream)
    headers = server.last_request.headers
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "application/json"
    assert headers["user-agent"].startswith("duragent/")
    assert not [name for name in headers if name.startswith("x-stainless")]


async def test_without_a_key_no_authorization_header_is_sent(
    server: ScriptedLLMServer, keyless: OpenAICompatibleProvider
) -> None:
    server.enqueue(Reply(text="ok"))
    await keyless.complete(HELLO)
    assert "authorization" not in server.last_request.headers


async def test_the_organization_and_project_come_from_the_sdks_variables(
    server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    provider = provider_at(server.openai_base_url)
    server.enqueue(Reply(text="ok"))
    await provider.complete(HELLO)
    await provider.aclose()
    assert server.last_request.headers["openai-organization"] == "org-1"
    assert server.last_request.headers["openai-project"] == "proj-1"


@pytest.mark.parametrize("suffix", ["", "/"], ids=["bare", "trailing-slash"])
async def test_the_path_is_joined_to_the_base_url_with_one_slash(
    server: ScriptedLLMServer, suffix: str
) -> None:
    provider = provider_at(server.openai_base_url + suffix)
    server.enqueue(Reply(text="ok"))
    await provider.complete(HELLO)
    await provider.aclose()
    assert server.last_request.path == "/v1/chat/completions"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_429_says_the_servers_message_and_carries_its_retry_after(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider, stream: bool
) -> None:
    server.enqueue(Fault(status=429, message="Slow down, please.", retry_after=7))
    with pytest.raises(LLMRateLimitError) as caught:
        await answer(openai_provider, HELLO, stream=stream)
    assert caught.value.retry_after == 7
    assert caught.value.status == 429
    assert str(caught.value) == "openai answered 429: Error code: 429 - Slow down, please."


async def test_a_5xx_without_a_json_body_is_a_server_error_named_by_its_code(
    server: ScriptedLLMServer, openai_provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(Fault(status=502, body="<html>bad gateway</html>"))
    with pytest.raises(LLMServerError) as caught:
        await openai_provider.complete(HELLO)
    assert str(caught.value) == "openai answered 502: Error code: 502"


async def test_the_key_appears_in_no_error_message(server: ScriptedLLMServer) -> None:
    refused = provider_at(f"http://127.0.0.1:{unused_port()}/v1", api_key=SECRET)
    refusing = provider_at(server.openai_base_url, api_key=SECRET)
    server.enqueue(Fault(status=401))
    for provider, error in ((refused, LLMConnectionError), (refusing, LLMAuthError)):
        with pytest.raises(error) as caught:
            await provider.complete(HELLO)
        await provider.aclose()
        assert SECRET not in str(caught.value)
        assert SECRET not in repr(caught.value.__cause__)
