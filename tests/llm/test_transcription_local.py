"""The local transcriber (faster-whisper, the ``duragent[voice]`` extra) without a real model.

The real model is ``test_transcription_real_model.py`` (opt-in). Here a stand-in
``faster_whisper`` module records how the transcriber drives it: loaded once, lazily, in a
worker thread, with the settings' device and precision; and a missing extra is told with
the command that installs it.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import io
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from duragent.errors import ConfigError, LLMBadRequestError, LLMError
from duragent.llm.transcription import (
    LocalWhisperTranscriber,
    TranscriptionSettings,
    transcriber_for,
)

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "


@dataclass
class Segment:
    text: str


@dataclass
class StandIn:
    """What the stand-in ``WhisperModel`` was asked, shared by every instance."""

    loads: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    calls: list[tuple[bytes, str | None, str]] = field(default_factory=list)
    load_gate: threading.Event = field(default_factory=threading.Event)
    loading: threading.Event = field(default_factory=threading.Event)
    fail_with: Exception | None = None


def stand_in_module(seen: StandIn) -> types.ModuleType:
    module = types.ModuleType("faster_whisper")
    module.__spec__ = importlib.machinery.ModuleSpec("faster_whisper", None)

    class WhisperModel:
        def __init__(self, model: str, **options: Any) -> None:
            seen.loading.set()
            seen.load_gate.wait(timeout=120)
            seen.loads.append((model, options))

        def transcribe(self, audio: io.BytesIO, language: str | None = None) -> Any:
            if seen.fail_with is not None:
                raise seen.fail_with
            seen.calls.append((audio.read(), language, threading.current_thread().name))
            return iter([Segment(" hello"), Segment(" world. ")]), object()

    module.WhisperModel = WhisperModel  # type: ignore[attr-defined]
    return module


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    seen = StandIn()
    seen.load_gate.set()
    monkeypatch.setitem(sys.modules, "faster_whisper", stand_in_module(seen))
    return seen


def local(model: str = "base", **settings: Any) -> LocalWhisperTranscriber:
    made = transcriber_for(TranscriptionSettings(provider="local", model=model, **settings))
    assert isinstance(made, LocalWhisperTranscriber)
    return made


async def test_the_segments_are_joined_into_one_transcript(stand_in: StandIn) -> None:
    text = await local().transcribe(WAV, filename="v.wav", mime="audio/wav", language="en")
    assert text == "hello world."
    ((audio, language, thread),) = stand_in.calls
    assert (audio, language) == (WAV, "en")
    assert thread != threading.main_thread().name  # decoded off the event loop


async def test_the_model_is_loaded_once_on_first_use_even_by_two_calls_at_once(
    stand_in: StandIn,
) -> None:
    stand_in.load_gate.clear()
    made = local(language="de")
    assert stand_in.loads == []  # not at construction
    first = asyncio.ensure_future(made.transcribe(WAV, filename="a.wav", mime="audio/wav"))
    await asyncio.to_thread(stand_in.loading.wait, 30)  # the first call is loading the model
    second = asyncio.ensure_future(
        made.transcribe(WAV, filename="b.wav", mime="audio/wav", language="fr")
    )
    stand_in.load_gate.set()
    assert list(await asyncio.gather(first, second)) == ["hello world.", "hello world."]
    await made.transcribe(WAV, filename="c.wav", mime="audio/wav")
    assert stand_in.loads == [
        ("base", {"device": "cpu", "compute_type": "int8", "local_files_only": False})
    ]
    assert sorted(str(language) for _, language, _ in stand_in.calls) == ["de", "de", "fr"]


async def test_a_model_folder_is_opened_without_downloading(
    stand_in: StandIn, tmp_path: Path
) -> None:
    await local(str(tmp_path), device="auto", compute_type="float32").transcribe(
        WAV, filename="v.wav", mime="audio/wav"
    )
    assert stand_in.loads == [
        (str(tmp_path), {"device": "auto", "compute_type": "float32", "local_files_only": True})
    ]


async def test_audio_that_cannot_be_decoded_is_a_bad_request(stand_in: StandIn) -> None:
    stand_in.fail_with = ValueError("Invalid data found when processing input")
    with pytest.raises(LLMBadRequestError, match="Invalid data found") as info:
        await local().transcribe(b"not audio", filename="v.ogg", mime="audio/ogg")
    assert info.value.provider == "transcription (local)"
    with pytest.raises(LLMBadRequestError, match="empty"):
        await local().transcribe(b"", filename="v.ogg", mime="audio/ogg")


def test_without_the_voice_extra_the_local_transcriber_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # as if not installed
    with pytest.raises(ConfigError) as info:
        transcriber_for(TranscriptionSettings(provider="local"))
    assert info.value.field == "transcription.provider"
    assert "pip install 'duragent[voice]'" in str(info.value)


async def test_an_extra_that_cannot_be_imported_when_first_used_is_told_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = LocalWhisperTranscriber(TranscriptionSettings(provider="local"))
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    with pytest.raises(LLMError, match=r"pip install 'duragent\[voice\]'"):
        await made.transcribe(WAV, filename="v.wav", mime="audio/wav")


async def test_a_model_that_cannot_be_loaded_is_told_and_tried_again_next_time(
    tmp_path: Path,
) -> None:
    pytest.importorskip("faster_whisper", reason="the voice extra is not installed")
    empty = tmp_path / "no-model-here"
    empty.mkdir()
    made = local(str(empty))
    for _ in range(2):
        with pytest.raises(LLMError, match="cannot load the Whisper model") as info:
            await made.transcribe(WAV, filename="v.wav", mime="audio/wav")
        assert type(info.value) is LLMError
        assert not info.value.retryable
