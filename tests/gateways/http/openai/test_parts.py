"""``image_url`` parts of a chat completion: data URLs kept as image attachments, URLs refused."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionContentPartParam, ChatCompletionMessageParam
from PIL import Image

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served


def sdk(port: int | None) -> AsyncOpenAI:
    assert port is not None
    return AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def image_part(url: str) -> ChatCompletionContentPartParam:
    return {"type": "image_url", "image_url": {"url": url, "detail": "low"}}


def asking(*parts: ChatCompletionContentPartParam) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": list(parts)}]


async def test_a_data_url_image_is_kept_as_the_new_messages_image_attachment(
    tmp_path: Path,
) -> None:
    picture = png()
    url = "data:image/png;base64," + base64.b64encode(picture).decode()
    async with served(tmp_path) as s, sdk(s.runtime.http_port) as client:
        s.server.enqueue(Reply(text="a red square"), Reply(text="still red"))
        content = [{"type": "text", "text": "what is this?"}, image_part(url)]
        raw = await client.chat.completions.with_raw_response.create(
            model="bot",
            messages=[{"role": "user", "content": content}],  # type: ignore[misc,list-item]
        )
        assert raw.parse().choices[0].message.content == "a red square"
        session_id = raw.headers["x-duragent-session"]
        streamed = await client.chat.completions.create(
            model="bot",
            messages=asking(image_part(url)),
            stream=True,
            extra_body={"session_id": session_id},
        )
        assert "".join([c.choices[0].delta.content or "" async for c in streamed if c.choices])
        history = (await s.client.get(f"/api/v1/sessions/{session_id}/messages")).json()
        users = [m for m in history["messages"] if m["role"] == "user"]
        assert [m["content"] for m in users] == ["what is this?", ""]
        for user in users:
            (shown,) = user["attachments"]
            assert (shown["kind"], shown["mime"], shown["size"]) == (
                "image",
                "image/png",
                len(picture),
            )
            assert "name" not in shown
            got = await s.client.get(shown["url"])
            assert got.content == picture
            assert got.headers["content-disposition"].startswith('attachment; filename="image-')


@pytest.mark.parametrize(
    ("url", "code", "said"),
    [
        ("https://example.com/cat.png", "unsupported_value", "does not fetch images from URLs"),
        ("HTTP://169.254.169.254/latest", "unsupported_value", "does not fetch images from URLs"),
        ("data:text/plain;base64,aGk=", "invalid_value", "only images"),
        ("data:image/png,rawbytes", "invalid_value", "must be a base64 data: URL"),
        ("data:image/png;base64,not base64!", "invalid_value", "not standard base64"),
        ("ftp://example.com/x.png", "invalid_value", "must be a base64 data: URL"),
    ],
)
async def test_an_image_the_server_would_have_to_fetch_or_cannot_read_is_a_400(
    tmp_path: Path, url: str, code: str, said: str
) -> None:
    async with served(tmp_path) as s, sdk(s.runtime.http_port) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(model="bot", messages=asking(image_part(url)))
        sessions = (await s.client.get("/api/v1/sessions")).json()["sessions"]
    assert caught.value.param == "messages[0].content[0].image_url.url"
    assert caught.value.code == code
    assert said in caught.value.message
    assert sessions == []  # refused before a session was made
