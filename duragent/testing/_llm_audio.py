"""The fake model server's speech-to-text: ``POST /v1/audio/transcriptions``, scripted per test.

A voice note becomes text through any OpenAI-compatible transcription endpoint (OpenAI, Groq,
a local server): a multipart form with the audio ``file`` and the ``model`` (optionally
``language``, ``prompt``, ``response_format``, ``temperature``). The fake answers what the
test scripted: the next queued transcript (or ``Fault``), else the default transcript, else
418 "script exhausted" as the chat endpoints do. It records every upload it answered (bytes,
file name, type, model, the other fields), so a test checks what the transcriber was sent.

The checks an OpenAI-compatible server makes before transcribing are kept, each a 400 in
OpenAI's error shape: a body that is not a multipart form, no ``file`` or ``model``, an empty
file, a file name whose extension is not an audio format OpenAI takes (a voice note sent as
``blob`` fails there), an unknown ``response_format``; a file over 25 MB is 413.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesHeaderParser
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from duragent.testing import wire_openai
from duragent.testing.script import Fault

__all__ = [
    "AUDIO_EXTENSIONS",
    "MAX_AUDIO_BYTES",
    "AudioUpload",
    "TranscriptItem",
    "TranscriptScript",
    "transcript_items",
]

AUDIO_EXTENSIONS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
"""File name extensions OpenAI's transcription endpoint takes."""
MAX_AUDIO_BYTES = 25 * 1024 * 1024
"""The largest audio file OpenAI's transcription endpoint takes."""
_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
_EXHAUSTED = 418  # the chat endpoints' "script exhausted" status (fake_llm_server)

TranscriptItem = str | Fault
"""A scripted answer to one upload: its transcript, or an HTTP error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioUpload:
    """One audio file the fake transcribed (or answered with a scripted fault)."""

    index: int
    """0-based order among the transcription requests answered."""
    data: bytes
    filename: str
    content_type: str | None
    """The file part's own ``Content-Type`` (what the client said the audio is)."""
    model: str
    language: str | None = None
    response_format: str | None = None
    prompt: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    """Every text field of the form, ``model`` included."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-friendly form (``GET /_fake/transcriptions``): the bytes as base64."""
        return {
            "index": self.index,
            "filename": self.filename,
            "content_type": self.content_type,
            "size": len(self.data),
            "data_base64": base64.b64encode(self.data).decode(),
            "model": self.model,
            "fields": dict(self.fields),
        }


@dataclass(frozen=True, slots=True)
class _FilePart:
    filename: str
    content_type: str | None
    data: bytes


def _form(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, _FilePart]] | None:
    """A multipart form's text fields and file parts (``None`` when it is not one)."""
    header = Message()
    header["content-type"] = content_type
    boundary = header.get_param("boundary")
    if header.get_content_type() != "multipart/form-data" or not isinstance(boundary, str):
        return None
    texts: dict[str, str] = {}
    files: dict[str, _FilePart] = {}
    delimiter = b"--" + boundary.encode("latin-1")
    for chunk in body.split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break
        head, sep, payload = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not sep:
            return None
        part = BytesHeaderParser().parsebytes(head + b"\r\n\r\n")
        payload = payload.removesuffix(b"\r\n")
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        filename = part.get_filename()
        if filename is not None:
            files[name] = _FilePart(filename, part.get("content-type"), payload)
        else:
            texts[name] = payload.decode("utf-8", "replace")
    return texts, files


def _refusal(message: str, param: str | None, code: str | None, status: int = 400) -> Response:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return JSONResponse({"error": error}, status)


def _missing(param: str) -> Response:
    return _refusal(f"Missing required parameter: {param!r}.", param, "missing_required_parameter")


class TranscriptScript:
    """What the transcription endpoint answers, and what it was sent (thread-safe)."""

    def __init__(
        self,
        default: str | None = None,
        *,
        hears: Callable[[AudioUpload], TranscriptItem] | None = None,
    ) -> None:
        self.default = default
        """Answered once the queue is empty (``None``: 418 "script exhausted")."""
        self.hears = hears
        """Once the queue is empty, what an upload says, decided from the upload itself (its
        bytes): uploads in flight at once get their own transcripts, whatever their order.
        Takes precedence over ``default``."""
        self._queue: deque[TranscriptItem] = deque()
        self._uploads: list[AudioUpload] = []
        self._lock = threading.Lock()

    def enqueue(self, items: Iterable[TranscriptItem]) -> None:
        """Answer the next uploads with these, in order."""
        with self._lock:
            self._queue.extend(items)

    @property
    def uploads(self) -> list[AudioUpload]:
        """Every upload answered, in order."""
        with self._lock:
            return list(self._uploads)

    def routes(self) -> list[Route]:
        """The endpoint, and its control for a server in another process.

        ``POST /_fake/transcripts`` queues a list of transcripts (faults as objects) or sets
        ``{"default": …}``; ``GET /_fake/transcriptions`` lists the uploads (bytes as base64).
        """
        return [
            Route("/v1/audio/transcriptions", self.endpoint, methods=["POST"]),
            Route("/_fake/transcripts", self._script, methods=["POST"]),
            Route("/_fake/transcriptions", self._uploads_json, methods=["GET"]),
        ]

    async def _script(self, request: Request) -> Response:
        try:
            body = await request.json()
            if isinstance(body, dict) and set(body) == {"default"}:
                self.default = None if body["default"] is None else str(body["default"])
            else:
                self.enqueue(transcript_items(body))
        except (TypeError, ValueError) as exc:
            return JSONResponse({"error": str(exc)}, 400)
        with self._lock:
            return JSONResponse({"default": self.default, "queued": len(self._queue)})

    async def _uploads_json(self, _request: Request) -> Response:
        return JSONResponse([u.to_json() for u in self.uploads])

    async def endpoint(self, request: Request) -> Response:
        """``POST /v1/audio/transcriptions``."""
        body = await request.body()
        if len(body) > MAX_AUDIO_BYTES + 64 * 1024:
            limit = f"Maximum content size limit ({MAX_AUDIO_BYTES}) exceeded ({len(body)} bytes)"
            return _refusal(limit, None, None, 413)
        form = _form(request.headers.get("content-type", ""), body)
        if form is None:
            return _refusal("Could not parse multipart form", None, None)
        texts, files = form
        part = files.get("file")
        if part is None:
            return _missing("file")
        model = texts.get("model")
        if not model:
            return _missing("model")
        audio, filename = part.data, part.filename
        if filename.rsplit(".", 1)[-1].lower() not in AUDIO_EXTENSIONS or "." not in filename:
            formats = ", ".join(repr(e) for e in AUDIO_EXTENSIONS)
            return _refusal(
                f"Invalid file format. Supported formats: [{formats}]", "file", "invalid_value"
            )
        if not audio:
            return _refusal(
                "Audio file is too short. Minimum audio length is 0.1 seconds.",
                "file",
                "audio_too_short",
            )
        response_format = texts.get("response_format") or "json"
        if response_format not in _FORMATS:
            supported = ", ".join(repr(f) for f in _FORMATS)
            return _refusal(
                f"Invalid value: {response_format!r}. Supported values are: {supported}.",
                "response_format",
                "invalid_value",
            )
        with self._lock:
            upload = AudioUpload(
                index=len(self._uploads),
                data=audio,
                filename=filename,
                content_type=part.content_type,
                model=model,
                language=texts.get("language"),
                response_format=texts.get("response_format"),
                prompt=texts.get("prompt"),
                fields=dict(texts),
            )
            self._uploads.append(upload)
            item = self._queue.popleft() if self._queue else None
        if item is None:
            item = self.hears(upload) if self.hears is not None else self.default
        if item is None:
            message = f"fake LLM server: transcript script exhausted at upload #{upload.index}"
            return _refusal(message, None, None, _EXHAUSTED)
        if isinstance(item, Fault):
            if item.delay:
                await asyncio.sleep(item.delay)
            body_json = item.body if item.body is not None else wire_openai.error_body(item)
            if isinstance(body_json, str):
                return PlainTextResponse(body_json, item.status, headers=item.all_headers())
            return JSONResponse(dict(body_json), item.status, headers=item.all_headers())
        return _transcript(item, response_format, upload.language)


def _transcript(text: str, response_format: str, language: str | None) -> Response:
    seconds = max(1.0, len(text.split()) / 2.5)  # speech at about 150 words a minute
    stamp = f"00:00:{int(seconds):02d}"
    if response_format == "text":
        return PlainTextResponse(text + "\n")
    if response_format == "srt":
        return PlainTextResponse(f"1\n00:00:00,000 --> {stamp},000\n{text}\n\n")
    if response_format == "vtt":
        return PlainTextResponse(f"WEBVTT\n\n00:00:00.000 --> {stamp}.000\n{text}\n\n")
    if response_format == "verbose_json":
        segment = {"id": 0, "seek": 0, "start": 0.0, "end": seconds, "text": text}
        segment.update(tokens=[], temperature=0.0, avg_logprob=-0.2, compression_ratio=1.0)
        segment["no_speech_prob"] = 0.01
        verbose = {
            "task": "transcribe",
            "language": language or "english",
            "duration": seconds,
            "text": text,
            "segments": [segment],
        }
        return JSONResponse(verbose)
    return JSONResponse({"text": text})


def transcript_items(data: Any) -> list[TranscriptItem]:
    """Script items from JSON (``POST /_fake/transcripts``): strings, or faults as objects."""
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of transcripts (strings) or faults (objects)")
    items: list[TranscriptItem] = []
    for item in data:
        if isinstance(item, str):
            items.append(item)
        elif isinstance(item, dict):
            items.append(Fault(**{k: v for k, v in item.items() if k != "kind"}))
        else:
            raise ValueError(f"a transcript item is a string or a fault object, not {item!r}")
    return items
