"""Voice notes become text through an OpenAI-compatible ``/audio/transcriptions`` endpoint.

Against the scripted model server (``ScriptedLLMServer``): what is uploaded, what comes back,
how each failure is told, and that the key appears nowhere but in the request's header.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from duragent.errors import (
    ContextLengthExceededError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
)
from duragent.llm.transcription import (
    OpenAITranscriber,
    TranscriptionSettings,
    transcriber_for,
    transcription_url,
    upload_name,
)
from duragent.testing import ScriptedLLMServer
from duragent.testing.script import Fault
from tests.llm.test_transport_errors import say_nothing, serving, unused_port

KEY = "sk-transcribe-0123456789SECRET"
OGG = b"OggS\x00\x02" + bytes(64)  # a voice note's first bytes: the fake does not decode audio


@pytest.fixture
async def voice() -> AsyncIterator[ScriptedLLMServer]:
    async with ScriptedLLMServer(transcript="remind me at five") as fake:
        yield fake


def transcriber(
    srv: ScriptedLLMServer, *, language: str | None = None, timeout: float = 10
) -> OpenAITranscriber:
    settings = TranscriptionSettings(
        base_url=srv.openai_base_url, api_key=KEY, language=language, timeout_seconds=timeout
    )
    made = transcriber_for(settings)
    assert isinstance(made, OpenAITranscriber)
    return made


async def failure(made: OpenAITranscriber, data: bytes = OGG) -> LLMError:
    with pytest.raises(LLMError) as info:
        await made.transcribe(data, filename="voice.ogg", mime="audio/ogg")
    return info.value


async def test_a_voice_note_comes_back_as_its_transcript(voice: ScriptedLLMServer) -> None:
    text = await transcriber(voice).transcribe(OGG, filename="voice.oga", mime="audio/ogg")
    assert text == "remind me at five"


async def test_the_upload_carries_the_file_its_type_the_model_and_the_language(
    voice: ScriptedLLMServer,
) -> None:
    await transcriber(voice).transcribe(OGG, filename="note.oga", mime="audio/ogg", language="de")
    (upload,) = voice.transcriptions
    assert (upload.data, upload.filename, upload.content_type) == (OGG, "note.oga", "audio/ogg")
    assert (upload.model, upload.language, upload.response_format) == ("whisper-1", "de", "json")


async def test_the_settings_language_is_sent_unless_the_call_names_one(
    voice: ScriptedLLMServer,
) -> None:
    made = transcriber(voice, language="fr")
    await made.transcribe(OGG, filename="a.ogg", mime="audio/ogg")
    await made.transcribe(OGG, filename="b.ogg", mime="audio/ogg", language="it")
    await transcriber(voice).transcribe(OGG, filename="c.ogg", mime="audio/ogg")
    first, second, third = voice.transcriptions
    assert (first.language, second.language) == ("fr", "it")
    assert "language" not in third.fields  # unknown: the endpoint detects it


async def test_a_voice_note_without_an_audio_file_name_is_named_by_its_type(
    voice: ScriptedLLMServer,
) -> None:
    """The endpoint tells the format by the name: ``voice`` alone would be a 400."""
    made = transcriber(voice)
    assert await made.transcribe(OGG, filename="voice", mime="audio/ogg") == "remind me at five"
    await made.transcribe(b"ID3\x04", filename="blob", mime="audio/mpeg")
    assert [u.filename for u in voice.transcriptions] == ["voice.ogg", "blob.mp3"]


def test_an_upload_name_keeps_an_accepted_extension_and_drops_folders() -> None:
    assert upload_name("Voice.OGA", "audio/ogg") == "Voice.OGA"
    assert upload_name("../../x/song.mp3", "audio/mpeg") == "song.mp3"
    assert upload_name("C:\\a\\memo.m4a", "audio/mp4") == "memo.m4a"
    assert upload_name("", "audio/ogg; codecs=opus") == "audio.ogg"
    assert upload_name("voice.opus", "audio/ogg") == "voice.opus.ogg"
    assert upload_name("clip.aac", "audio/aac") == "clip.aac"  # no known one: the endpoint says


def test_the_endpoint_is_the_base_url_joined_with_one_slash() -> None:
    for base in ("https://api.groq.com/openai/v1", "https://api.groq.com/openai/v1/"):
        assert transcription_url(base) == "https://api.groq.com/openai/v1/audio/transcriptions"


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.unauthorized(), LLMAuthError),
        (Fault.unauthorized(403), LLMAuthError),
        (Fault.rate_limited(), LLMRateLimitError),
        (Fault.server_error(503), LLMServerError),
        (Fault.overloaded(), LLMServerError),
        (Fault.bad_request("Invalid file format."), LLMBadRequestError),
        (Fault(status=404, message="model not found"), LLMBadRequestError),
        (Fault(status=408), LLMTimeoutError),
        (Fault(status=200, body="<html>a proxy's page</html>"), LLMResponseError),
        (Fault(status=200, body={"segments": []}), LLMResponseError),
    ],
)
async def test_each_failure_is_the_llm_error_a_front_end_tells_apart(
    voice: ScriptedLLMServer, fault: Fault, error: type[LLMError]
) -> None:
    voice.enqueue_transcripts(fault)
    told = await failure(transcriber(voice))
    assert type(told) is error
    assert told.provider == "transcription"
    assert "/audio/transcriptions" in str(told) or error is LLMResponseError
    if fault.status != 200:
        assert told.status == fault.status


async def test_a_refused_key_says_which_setting_to_check(voice: ScriptedLLMServer) -> None:
    voice.enqueue_transcripts(Fault(status=401, message="Incorrect API key provided"))
    told = await failure(transcriber(voice))
    assert "Incorrect API key provided" in str(told)
    assert "transcription api_key" in str(told)
    assert not told.retryable


async def test_a_rate_limit_carries_the_servers_retry_after(voice: ScriptedLLMServer) -> None:
    voice.enqueue_transcripts(Fault.rate_limited(retry_after=7))
    told = await failure(transcriber(voice))
    assert isinstance(told, LLMRateLimitError)
    assert (told.retry_after, told.retryable) == (7, True)


async def test_a_file_too_large_is_a_bad_request_never_a_context_overflow(
    voice: ScriptedLLMServer,
) -> None:
    voice.enqueue_transcripts(Fault(status=413, message="Maximum content size limit exceeded"))
    told = await failure(transcriber(voice))
    assert type(told) is LLMBadRequestError
    assert not isinstance(told, ContextLengthExceededError)
    assert "too large" in str(told)


async def test_empty_audio_is_refused_without_a_request(voice: ScriptedLLMServer) -> None:
    told = await failure(transcriber(voice), b"")
    assert type(told) is LLMBadRequestError
    assert voice.transcriptions == []


async def test_a_refused_connection_is_a_connection_error() -> None:
    settings = TranscriptionSettings(base_url=f"http://127.0.0.1:{unused_port()}/v1")
    told = await failure(OpenAITranscriber(settings))
    assert type(told) is LLMConnectionError
    assert told.retryable


async def test_an_endpoint_that_never_answers_is_a_timeout_of_the_settings_seconds() -> None:
    async for port in serving(say_nothing):
        settings = TranscriptionSettings(
            base_url=f"http://127.0.0.1:{port}/v1", timeout_seconds=0.5
        )
        told = await failure(OpenAITranscriber(settings))
        assert type(told) is LLMTimeoutError
        assert "0.5 s" in str(told)


async def test_the_key_is_sent_as_a_bearer_header() -> None:
    heads: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        await reader.readexactly(length)
        body = b'{"text": " hello "}'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()

    async for port in serving(answer):
        settings = TranscriptionSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY)
        text = await transcriber_for(settings).transcribe(OGG, filename="v.ogg", mime="audio/ogg")
    assert text == "hello"
    (head,) = heads
    assert head.startswith(b"POST /v1/audio/transcriptions HTTP/1.1\r\n")
    assert f"Authorization: Bearer {KEY}\r\n".encode() in head


async def test_without_a_key_no_authorization_header_is_sent(voice: ScriptedLLMServer) -> None:
    settings = TranscriptionSettings(base_url=voice.openai_base_url, api_key=None)
    made = transcriber_for(settings)
    assert await made.transcribe(OGG, filename="v.ogg", mime="audio/ogg") == "remind me at five"


async def test_the_key_is_in_no_log_line_error_or_repr(
    voice: ScriptedLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    made = transcriber(voice)
    await made.transcribe(OGG, filename="v.ogg", mime="audio/ogg")
    # An endpoint that echoes the key it refused: the error text must not repeat it.
    voice.enqueue_transcripts(Fault(status=401, message=f"Incorrect API key provided: {KEY}"))
    told = await failure(made)
    assert "transcription: POST" in caplog.text  # the calls are logged, at debug
    for shown in (caplog.text, str(told), repr(made), repr(made.settings)):
        assert KEY not in shown
    assert "***" in str(told)


def test_the_settings_default_the_model_to_the_providers_own() -> None:
    assert TranscriptionSettings().model == "whisper-1"
    assert TranscriptionSettings(provider="local").model == "base"
    assert TranscriptionSettings(model="whisper-large-v3-turbo").model == "whisper-large-v3-turbo"


@pytest.mark.parametrize(
    "wrong",
    [{"provider": "groq"}, {"timeout_seconds": 0}, {"base_url": ""}],
)
def test_settings_that_cannot_work_are_refused(wrong: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        TranscriptionSettings(**wrong)  # type: ignore[arg-type]
