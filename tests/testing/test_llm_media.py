"""Images and audio through the fake model server, sent by the real OpenAI and Anthropic SDKs.

A vision request's image parts are read back decoded (``images``), a request the provider
would refuse can be refused (``strict_images``), and ``/v1/audio/transcriptions`` answers the
scripted transcript and records the upload, as a transcription provider would see it.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import httpx
import openai
import pytest

from duragent.testing import Fault, Reply, ScriptedLLMServer
from duragent.testing._llm_audio import AudioUpload
from tests.testing.images import png

OGG = b"OggS\x00\x02voice-note-bytes"


def openai_client(srv: ScriptedLLMServer) -> openai.AsyncOpenAI:
    """The OpenAI SDK on the fake, without retries (closed by ``async with``)."""
    return openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="k", max_retries=0)


def anthropic_client(srv: ScriptedLLMServer) -> anthropic.AsyncAnthropic:
    """The Anthropic SDK on the fake, without retries (closed by ``async with``)."""
    return anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key="k", max_retries=0)


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def vision_message(url: str, detail: str = "auto") -> list[dict[str, Any]]:
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url, "detail": detail}},
    ]
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": parts}]


async def test_openai_image_parts_are_recorded_with_their_bytes() -> None:
    picture = png(300, 200)
    async with (
        ScriptedLLMServer([Reply(text="A red square.")]) as srv,
        openai_client(srv) as client,
    ):
        answer = await client.chat.completions.create(
            model="gpt-4o",
            messages=vision_message(data_url(picture), "low"),  # type: ignore[arg-type]
        )
        assert answer.choices[0].message.content == "A red square."
        (image,) = srv.images(0)
        assert (image.wire, image.message, image.role) == ("openai", 1, "user")
        assert (image.mime, image.data, image.detail) == ("image/png", picture, "low")
        assert (image.width, image.height, image.problem) == (300, 200, None)
        assert srv.images() == srv.images(0)


async def test_an_image_sent_by_url_is_recorded_with_its_address() -> None:
    async with ScriptedLLMServer([Reply(text="ok")]) as srv, openai_client(srv) as client:
        await client.chat.completions.create(
            model="gpt-4o",
            messages=vision_message("https://example.org/cat.png"),  # type: ignore[arg-type]
        )
        (image,) = srv.images()
        assert (image.url, image.data, image.problem) == ("https://example.org/cat.png", None, None)


async def test_anthropic_image_blocks_are_recorded_in_messages_and_tool_results() -> None:
    picture, chart = png(64, 32), png(10, 10)
    source = {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(picture).decode(),
    }
    result_image = {
        "type": "image",
        "source": {**source, "data": base64.b64encode(chart).decode()},
    }
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "image", "source": source}, {"type": "text", "text": "?"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "plot", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [result_image]}],
        },
    ]
    async with (
        ScriptedLLMServer([Reply(text="Two pictures.")]) as srv,
        anthropic_client(srv) as client,
    ):
        answer = await client.messages.create(
            model="claude-x",
            max_tokens=100,
            messages=messages,  # type: ignore[arg-type]
        )
        assert answer.content[0].text == "Two pictures."  # type: ignore[union-attr]
        first, second = srv.images()
        assert (first.wire, first.message, first.data, first.in_tool_result) == (
            "anthropic",
            0,
            picture,
            False,
        )
        assert (second.message, second.data, second.in_tool_result) == (2, chart, True)
        assert (second.width, second.height) == (10, 10)


async def test_strict_images_refuses_what_the_provider_would_without_using_the_script() -> None:
    mislabelled = {
        "type": "base64",
        "media_type": "image/jpeg",
        "data": base64.b64encode(png(4, 4)).decode(),
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "source": mislabelled}]}
    ]
    async with (
        ScriptedLLMServer([Reply(text="seen")], strict_images=True) as srv,
        anthropic_client(srv) as client,
        openai_client(srv) as oai,
    ):
        with pytest.raises(anthropic.BadRequestError, match="does not match the provided media"):
            await client.messages.create(
                model="claude-x",
                max_tokens=10,
                messages=messages,  # type: ignore[arg-type]
            )
        assert srv.pending == 1
        with pytest.raises(openai.BadRequestError, match="unsupported image"):
            await oai.chat.completions.create(
                model="gpt-4o",
                messages=vision_message(data_url(b"not a picture")),  # type: ignore[arg-type]
            )
        answer = await oai.chat.completions.create(
            model="gpt-4o",
            messages=vision_message(data_url(png(8, 8))),  # type: ignore[arg-type]
        )
        assert answer.choices[0].message.content == "seen"


async def test_without_strict_images_a_bad_image_is_recorded_with_its_problem() -> None:
    async with ScriptedLLMServer([Reply(text="ok")]) as srv, openai_client(srv) as client:
        await client.chat.completions.create(
            model="gpt-4o",
            messages=vision_message("data:image/png;base64,@@@"),  # type: ignore[arg-type]
        )
        (image,) = srv.images()
        assert image.data is None
        assert image.problem == "Invalid base64 image data."


async def test_the_openai_sdk_transcribes_a_voice_note_with_the_scripted_transcript() -> None:
    async with (
        ScriptedLLMServer(transcript="remind me at five") as srv,
        openai_client(srv) as client,
    ):
        result = await client.audio.transcriptions.create(
            file=("voice.oga", OGG, "audio/ogg"), model="whisper-1", language="en"
        )
        assert result.text == "remind me at five"
        (upload,) = srv.transcriptions
        assert (upload.data, upload.filename, upload.content_type) == (
            OGG,
            "voice.oga",
            "audio/ogg",
        )
        assert (upload.model, upload.language) == ("whisper-1", "en")
        again = await client.audio.transcriptions.create(file=("v.ogg", OGG), model="whisper-1")
        assert again.text == "remind me at five"


async def test_queued_transcripts_and_faults_are_answered_in_order() -> None:
    async with ScriptedLLMServer() as srv, openai_client(srv) as client:
        srv.enqueue_transcripts("first", Fault.rate_limited(retry_after=1), "third")
        send: dict[str, Any] = {"file": ("a.mp3", b"ID3"), "model": "whisper-large-v3"}
        assert (await client.audio.transcriptions.create(**send)).text == "first"
        with pytest.raises(openai.RateLimitError):
            await client.audio.transcriptions.create(**send)
        text = await client.audio.transcriptions.create(**send, response_format="text")
        assert text.strip() == "third"
        with pytest.raises(openai.APIStatusError) as exhausted:
            await client.audio.transcriptions.create(**send)
        assert exhausted.value.status_code == 418
        assert [u.index for u in srv.transcriptions] == [0, 1, 2, 3]


async def test_hears_gives_each_upload_the_transcript_its_bytes_decide() -> None:
    def hears(upload: AudioUpload) -> str:
        return "I said " + upload.data.decode().removeprefix("OggS ")

    async with (
        ScriptedLLMServer(transcript="never used", hears=hears) as srv,
        openai_client(srv) as client,
    ):
        srv.enqueue_transcripts("queued first")
        send: dict[str, Any] = {"model": "whisper-1"}
        first = await client.audio.transcriptions.create(file=("a.ogg", b"OggS one"), **send)
        second = await client.audio.transcriptions.create(file=("b.ogg", b"OggS two"), **send)
        third = await client.audio.transcriptions.create(file=("c.ogg", b"OggS six"), **send)
        assert [first.text, second.text, third.text] == ["queued first", "I said two", "I said six"]


async def test_a_bad_upload_is_refused_with_an_openai_error_and_not_recorded() -> None:
    async with (
        ScriptedLLMServer(transcript="never") as srv,
        httpx.AsyncClient(base_url=srv.openai_base_url) as http,
    ):
        url = "/audio/transcriptions"
        no_file = await http.post(url, data={"model": "whisper-1"}, files={"x": ("a.ogg", OGG)})
        assert no_file.status_code == 400
        assert no_file.json()["error"]["param"] == "file"
        assert no_file.json()["error"]["type"] == "invalid_request_error"
        blob = await http.post(url, data={"model": "whisper-1"}, files={"file": ("blob", OGG)})
        assert "Invalid file format" in blob.json()["error"]["message"]
        empty = await http.post(url, data={"model": "whisper-1"}, files={"file": ("a.ogg", b"")})
        assert empty.json()["error"]["code"] == "audio_too_short"
        no_model = await http.post(url, files={"file": ("a.ogg", OGG)})
        assert no_model.json()["error"]["param"] == "model"
        not_a_form = await http.post(url, json={"file": "x", "model": "whisper-1"})
        assert not_a_form.status_code == 400
        assert srv.transcriptions == []


async def test_another_process_scripts_transcripts_and_reads_the_uploads() -> None:
    async with (
        ScriptedLLMServer() as srv,
        httpx.AsyncClient(base_url=srv.base_url) as http,
        openai_client(srv) as client,
    ):
        await http.post("/_fake/transcripts", json={"default": "fallback"})
        queued = await http.post("/_fake/transcripts", json=["one", {"status": 500}])
        assert queued.json() == {"default": "fallback", "queued": 2}
        assert (
            await client.audio.transcriptions.create(file=("a.wav", b"RIFF"), model="m")
        ).text == "one"
        with pytest.raises(openai.InternalServerError):
            await client.audio.transcriptions.create(file=("a.wav", b"RIFF"), model="m")
        assert (
            await client.audio.transcriptions.create(file=("a.wav", b"RIFF"), model="m")
        ).text == "fallback"
        uploads = (await http.get("/_fake/transcriptions")).json()
        assert [base64.b64decode(u["data_base64"]) for u in uploads] == [b"RIFF"] * 3
        assert uploads[0]["filename"] == "a.wav"
