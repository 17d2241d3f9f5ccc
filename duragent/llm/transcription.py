"""Speech to text: a voice note or audio file becomes the text of its message (issue 36).

One interface, ``Transcriber``, and two ways to meet it, chosen by ``TranscriptionSettings``:

- ``openai``: any OpenAI-compatible ``POST {base_url}/audio/transcriptions`` (OpenAI, Groq, a
  local server such as faster-whisper-server): a multipart form with the audio ``file``, the
  ``model``, the ``language`` when known and ``response_format=json``. Posted with aiohttp,
  the client the chat provider (``openai_compat``) uses, one session per call: a voice note is
  rare next to model calls, so no connection pool is kept alive between them (and there is
  nothing to close);
- ``local``: faster-whisper (CTranslate2) in this process, in a worker thread, the model
  loaded once on first use. It is the optional extra ``duragent[voice]``: the main install
  never pulls CTranslate2, PyAV and onnxruntime in for a feature most agents do not use.

Failures are ``LLMError`` s, so a front end tells the person what went wrong the way it does
for a model call: a refused key is ``LLMAuthError``, 429 ``LLMRateLimitError`` (with the
server's Retry-After), a deadline ``LLMTimeoutError``, refused audio ``LLMBadRequestError``
(a too-large file too: it is not a context overflow), 5xx ``LLMServerError``, an answer
without text ``LLMResponseError``. Nothing here retries: ``retryable`` says whether the caller
may. The API key is sent only in the ``Authorization`` header; it is left out of the
settings' repr, out of every log line, and cut out of any error text an endpoint echoes.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import io
import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import aiohttp

from duragent.errors import (
    ConfigError,
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
)
from duragent.llm._http_errors import parse_retry_after, status_message

__all__ = [
    "DEFAULT_MODELS",
    "VOICE_EXTRA_HINT",
    "LocalWhisperTranscriber",
    "OpenAITranscriber",
    "Transcriber",
    "TranscriptionProvider",
    "TranscriptionSettings",
    "transcriber_for",
    "transcription_url",
    "upload_name",
]

log = logging.getLogger(__name__)

TranscriptionProvider = Literal["openai", "local"]
_PROVIDERS: tuple[TranscriptionProvider, ...] = ("openai", "local")
DEFAULT_MODELS: Mapping[str, str] = {"openai": "whisper-1", "local": "base"}
"""The model used when the settings name none: OpenAI's, and faster-whisper's ``base``."""
VOICE_EXTRA_HINT = "pip install 'duragent[voice]'"
"""The fix for a local transcriber without faster-whisper."""

_ACCEPTED = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
"""File name extensions OpenAI's endpoint takes (it judges the format by the name alone)."""
_EXTENSIONS = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/wav": "wav",
    "audio/wave": "wav",
    "audio/x-wav": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "video/mp4": "mp4",
    "video/mpeg": "mpeg",
    "video/webm": "webm",
}
_REDACTED = "***"


class Transcriber(Protocol):
    """Turns audio into text; raises only ``LLMError`` s (see the module docstring)."""

    async def transcribe(
        self, data: bytes, *, filename: str, mime: str, language: str | None = None
    ) -> str:
        """The words spoken in ``data`` (``language``: an ISO 639-1 code, else detected)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptionSettings:
    """How voice notes are transcribed (one per workspace, from its configuration).

    Args:
        provider: ``openai`` (any OpenAI-compatible endpoint) or ``local`` (faster-whisper).
        base_url: the endpoint's API root, ``/audio/transcriptions`` is appended (``openai``).
        model: the model name the endpoint knows (``whisper-1``, Groq's
            ``whisper-large-v3-turbo``); for ``local``, a folder holding a CTranslate2
            conversion of Whisper (``model.bin``, ``config.json``, ``tokenizer.json``…) or a
            size name faster-whisper downloads on first use (``tiny``, ``base``, ``small``…).
            Empty: ``DEFAULT_MODELS`` of the provider.
        api_key: sent as ``Authorization: Bearer``; None or empty for a server without one.
            Never shown by ``repr``.
        language: the language spoken, when known (skips detection, avoids a wrong guess on a
            short note); a call's own ``language`` wins.
        timeout_seconds: the whole call's deadline (upload and transcription; ``openai``).
        device: where the local model runs (``cpu``, ``cuda``, ``auto``).
        compute_type: the local model's precision (``int8`` is fastest on a CPU).
    """

    provider: TranscriptionProvider = "openai"
    base_url: str = "https://api.openai.com/v1"
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    language: str | None = None
    timeout_seconds: float = 120.0
    device: str = "cpu"
    compute_type: str = "int8"

    def __post_init__(self) -> None:
        if self.provider not in _PROVIDERS:
            raise ValueError(f"transcription provider must be openai or local: {self.provider!r}")
        if not self.timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive, not {self.timeout_seconds!r}")
        if self.provider == "openai" and not self.base_url:
            raise ValueError("an openai transcription provider needs a base_url")
        if not self.model:
            object.__setattr__(self, "model", DEFAULT_MODELS[self.provider])


def transcriber_for(settings: TranscriptionSettings) -> Transcriber:
    """The transcriber ``settings`` ask for.

    Raises:
        ConfigError: ``local`` without faster-whisper installed (the fix names the extra).
    """
    if settings.provider == "openai":
        return OpenAITranscriber(settings)
    if not _has_faster_whisper():
        raise ConfigError(
            "local transcription needs faster-whisper, which is not installed",
            field="transcription.provider",
            value="local",
            fix=f"{VOICE_EXTRA_HINT}, or use an OpenAI-compatible endpoint (provider: openai)",
        )
    return LocalWhisperTranscriber(settings)


def _has_faster_whisper() -> bool:
    """Whether faster-whisper is installed (found, not imported: importing it takes seconds)."""
    try:
        return importlib.util.find_spec("faster_whisper") is not None
    except (ImportError, ValueError):  # a broken install, or one blocked in ``sys.modules``
        return False


def upload_name(filename: str, mime: str) -> str:
    """The file name to upload: the given one, given an extension the endpoint takes.

    OpenAI-compatible endpoints tell the audio's format by the name's extension only, and a
    voice note often has no name (Telegram's) or one like ``blob``: without this they refuse
    it with a 400. A name whose extension is accepted is kept as it is; another gets the
    extension of its type appended (``voice`` → ``voice.ogg``); a type without a known one
    leaves the name unchanged (and the endpoint says what it takes).
    """
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].strip() or "audio"
    if "." in name and name.rsplit(".", 1)[-1].lower() in _ACCEPTED:
        return name
    extension = _EXTENSIONS.get(mime.split(";", 1)[0].strip().lower())
    return f"{name}.{extension}" if extension else name


def _redact(text: str, key: str | None) -> str:
    """``text`` without ``key`` in it (an endpoint may echo what it was sent)."""
    return text.replace(key, _REDACTED) if key else text


def transcription_url(base_url: str) -> str:
    """``{base_url}/audio/transcriptions``, one slash in between."""
    return base_url.rstrip("/") + "/audio/transcriptions"


class OpenAITranscriber:
    """An OpenAI-compatible ``/audio/transcriptions`` endpoint (see the module docstring)."""

    def __init__(self, settings: TranscriptionSettings) -> None:
        self.settings = settings
        self.name = "transcription"
        """How errors name it (the provider of the ``LLMError``)."""
        self._url = transcription_url(settings.base_url)
        self._headers = {"Accept": "application/json"}
        if settings.api_key:
            self._headers["Authorization"] = f"Bearer {settings.api_key}"

    def __repr__(self) -> str:
        return f"OpenAITranscriber(url={self._url!r}, model={self.settings.model!r})"

    async def transcribe(
        self, data: bytes, *, filename: str, mime: str, language: str | None = None
    ) -> str:
        """Upload ``data`` and return the transcript (``LLMError`` s: module docstring)."""
        if not data:
            raise LLMBadRequestError(f"{self.name}: the audio is empty", provider=self.name)
        language = language or self.settings.language
        form = aiohttp.FormData()
        name = upload_name(filename, mime)
        form.add_field("file", data, filename=name, content_type=mime or "application/octet-stream")
        form.add_field("model", self.settings.model)
        if language:
            form.add_field("language", language)
        form.add_field("response_format", "json")
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_seconds)
        try:
            async with (
                aiohttp.ClientSession(headers=self._headers, timeout=timeout, trust_env=True) as s,
                s.post(self._url, data=form) as response,
            ):
                raw = await response.read()
                status, headers = response.status, response.headers
        except TimeoutError as exc:  # aiohttp's connect and read timeouts are TimeoutErrors
            seconds = f"{self.settings.timeout_seconds:g}"
            raise LLMTimeoutError(
                f"{self.name}: no answer from {self._url} within {seconds} s", provider=self.name
            ) from exc
        except aiohttp.ClientError as exc:
            said = _redact(str(exc), self.settings.api_key)
            raise LLMConnectionError(
                f"{self.name}: connection to {self._url} failed: {said}", provider=self.name
            ) from exc
        log.debug("transcription: POST %s (%s, %d bytes): %d", self._url, name, len(data), status)
        if not 200 <= status < 300:
            raise self._refusal(status, raw, headers)
        return self._text(raw)

    def _refusal(self, status: int, raw: bytes, headers: Mapping[str, str]) -> LLMError:
        """The error for a non-2xx answer, in words that say what to do."""
        said = _redact(status_message(status, raw)[0], self.settings.api_key)
        name = self.name
        if status in (401, 403):
            return LLMAuthError(
                f"{name}: {self._url} refused the credentials ({said}); check the "
                "transcription api_key",
                status=status,
                provider=name,
            )
        if status == 429:
            return LLMRateLimitError(
                f"{name}: rate limited by {self._url} ({said})",
                status=status,
                provider=name,
                retry_after=parse_retry_after(headers),
            )
        if status == 408:
            return LLMTimeoutError(
                f"{name}: {self._url} gave up ({said})", status=status, provider=name
            )
        if status >= 500:
            return LLMServerError(
                f"{name}: {self._url} failed ({said})",
                status=status,
                provider=name,
                retry_after=parse_retry_after(headers),
            )
        what = "the audio file is too large" if status == 413 else "the request was refused"
        return LLMBadRequestError(
            f"{name}: {what} by {self._url} ({said}; model {self.settings.model!r})",
            status=status,
            provider=name,
        )

    def _text(self, raw: bytes) -> str:
        """The transcript of a ``response_format=json`` answer: ``{"text": ...}``."""
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise LLMResponseError(
                f"{self.name}: the answer is not JSON: {exc}", provider=self.name
            ) from exc
        text = answer.get("text") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise LLMResponseError(
                f"{self.name}: the answer has no text field: {raw[:200]!r}", provider=self.name
            )
        return text.strip()


class LocalWhisperTranscriber:
    """faster-whisper in this process: the model loaded once, each call in a worker thread.

    Decoding runs in a thread so the event loop keeps serving other chats; CTranslate2
    releases the GIL while it computes. A call whose caller gives up (cancelled) still runs to
    its end in its thread: CTranslate2 cannot be interrupted. The model is loaded on the first
    call, not at start, so a workspace that never gets a voice note never spends the memory;
    a load that fails is tried again on the next call.
    """

    def __init__(self, settings: TranscriptionSettings) -> None:
        self.settings = settings
        self.name = "transcription (local)"
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalWhisperTranscriber(model={self.settings.model!r})"

    async def transcribe(
        self, data: bytes, *, filename: str, mime: str, language: str | None = None
    ) -> str:
        """The transcript of ``data``, in any format PyAV (FFmpeg) decodes."""
        if not data:
            raise LLMBadRequestError(f"{self.name}: the audio is empty", provider=self.name)
        return await asyncio.to_thread(self._transcribe, data, language or self.settings.language)

    def _transcribe(self, data: bytes, language: str | None) -> str:
        model = self._load()
        try:
            segments, _info = model.transcribe(io.BytesIO(data), language=language)
            # The segments are decoded as they are read: read them here, in the thread.
            return " ".join(segment.text.strip() for segment in segments).strip()
        except Exception as exc:  # PyAV's decoding errors, CTranslate2's RuntimeError
            raise LLMBadRequestError(
                f"{self.name}: the audio could not be transcribed: {exc}", provider=self.name
            ) from exc

    def _load(self) -> Any:
        """The model, loaded once (two first calls at once load it once)."""
        with self._lock:
            if self._model is None:
                self._model = self._open()
            return self._model

    def _open(self) -> Any:
        settings = self.settings
        try:
            faster_whisper = importlib.import_module("faster_whisper")
        except ImportError as exc:
            raise LLMError(
                f"{self.name}: faster-whisper cannot be imported ({exc}): {VOICE_EXTRA_HINT}",
                provider=self.name,
            ) from exc
        folder = Path(settings.model).expanduser()
        try:
            return faster_whisper.WhisperModel(
                str(folder) if folder.is_dir() else settings.model,
                device=settings.device,
                compute_type=settings.compute_type,
                local_files_only=folder.is_dir(),
            )
        except Exception as exc:  # a missing folder or file, a failed download, a bad device
            raise LLMError(
                f"{self.name}: cannot load the Whisper model {settings.model!r}: {exc} (model "
                "is a folder holding a CTranslate2 conversion, or a size name such as base "
                "that faster-whisper downloads)",
                provider=self.name,
            ) from exc
