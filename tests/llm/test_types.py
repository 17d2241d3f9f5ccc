"""``ImageMessage``: a user message whose images the providers send as their native parts.

Both providers build bodies from cached per-message fragments; an ``ImageMessage``'s
fragment carries its images (OpenAI ``image_url`` data URLs after the text, Anthropic
``image`` blocks before it), byte for byte what the SDKs' own ``create()`` would send for
the same content, and a provider that would refuse them (``strict_images``) does not.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from PIL import Image

from duragent.core.messages import Message, Role
from duragent.llm.anthropic_provider import (
    DEFAULT_MAX_TOKENS,
    AnthropicProvider,
    to_anthropic_request,
)
from duragent.llm.image_size import FittedImage
from duragent.llm.openai_compat import OpenAICompatibleProvider, to_openai_messages
from duragent.llm.types import ChatRequest, ImageMessage
from duragent.testing import Reply, ScriptedLLMServer
from tests.llm.helpers import collect


def jpeg(width: int, height: int) -> FittedImage:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (30, 120, 200)).save(out, "JPEG")
    return FittedImage(out.getvalue(), "image/jpeg", width, height)


PHOTO = jpeg(64, 48)
SHOT = jpeg(40, 40)


def with_images(text: str = "what is in these? é") -> ChatRequest:
    shown = ImageMessage(role=Role.USER, content=text, images=(PHOTO, SHOT), image_tokens=170)
    return ChatRequest(
        messages=[
            Message.system("be brief"),
            Message.user("earlier"),
            Message.assistant("yes"),
            shown,
        ],
        max_output_tokens=100,
    )


@pytest.fixture
async def openai_sdk(server: ScriptedLLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=server.openai_base_url, max_retries=0, timeout=5
    )
    yield client
    await client.close()


async def test_the_openai_provider_sends_an_image_message_as_the_sdk_would(
    server: ScriptedLLMServer,
    openai_provider: OpenAICompatibleProvider,
    openai_sdk: openai.AsyncOpenAI,
) -> None:
    server.strict_images = True
    request = with_images()
    server.enqueue(Reply(text="a"), Reply(text="b"))
    await openai_sdk.chat.completions.create(
        model=openai_provider.model,
        messages=to_openai_messages(list(request.messages)),  # type: ignore[arg-type]
        max_tokens=100,
    )
    await openai_provider.complete(request)
    by_sdk, by_provider = server.requests
    assert by_provider.raw == by_sdk.raw
    content = by_provider.body["messages"][-1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "image_url"]
    images = server.images()
    assert [(i.data, i.mime, i.width, i.height) for i in images] == [
        (PHOTO.data, "image/jpeg", 64, 48),
        (SHOT.data, "image/jpeg", 40, 40),
    ]
    assert all(i.problem is None for i in images)


@pytest.mark.parametrize("stream", [True, False])
async def test_the_anthropic_provider_sends_image_blocks_first_as_the_sdk_would(
    server: ScriptedLLMServer, anthropic_provider: AnthropicProvider, stream: bool
) -> None:
    server.strict_images = True
    request = with_images()
    server.enqueue(Reply(text="a"), Reply(text="b"))
    system, turns, _ = to_anthropic_request(request.messages)
    params: dict[str, Any] = {
        "model": anthropic_provider.model,
        "messages": turns,
        "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
        "system": system,
    }
    if stream:
        events = await anthropic_provider._client.messages.create(**params, stream=True)
        async for _ in events:
            pass
        await collect(anthropic_provider.stream(request))
    else:
        await anthropic_provider._client.messages.create(**params)
        await anthropic_provider.complete(request)
    by_sdk, by_provider = server.requests
    assert by_provider.raw == by_sdk.raw
    blocks = by_provider.body["messages"][-1]["content"]
    assert [b["type"] for b in blocks] == ["image", "image", "text"]
    assert [i.data for i in server.images()] == [PHOTO.data, SHOT.data]


async def test_an_image_message_without_text_is_its_images_alone(
    server: ScriptedLLMServer,
    openai_provider: OpenAICompatibleProvider,
    anthropic_provider: AnthropicProvider,
) -> None:
    request = with_images(text="")
    server.enqueue(Reply(text="a"), Reply(text="b"))
    await openai_provider.complete(request)
    await anthropic_provider.complete(request)
    by_openai, by_anthropic = server.requests
    assert [p["type"] for p in by_openai.body["messages"][-1]["content"]] == ["image_url"] * 2
    assert [b["type"] for b in by_anthropic.body["messages"][-1]["content"]] == ["image"] * 2


def test_an_image_message_is_a_user_message_compared_by_identity() -> None:
    one = ImageMessage(role=Role.USER, content="x", images=(PHOTO,), image_tokens=85)
    two = ImageMessage(role=Role.USER, content="x", images=(PHOTO,), image_tokens=85)
    assert isinstance(one, Message)
    assert one != two
    assert "images" not in repr(one)  # its bytes stay out of logs
