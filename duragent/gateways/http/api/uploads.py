"""A message's attachments as the HTTP API receives them: checked, then kept, then sent.

``POST …/messages`` and ``…/stream`` take a message as JSON (``{"content": …,
"attachments": [{"name", "mime", "data": base64}]}``) or as ``multipart/form-data`` (a
``content`` field and file parts); ``/v1/chat/completions`` takes images as ``data:`` URLs
(``openai.parts``). Every way ends in :class:`Upload` values, checked against the limits of
``server.media_limits`` (a kind's size: 413; their count: 400; their sum: 413) before
anything is stored, so a refused request leaves nothing behind.

``keeping.keep_uploads`` then stores the bytes in the session and returns the
``Attachment`` values the message's event will name. Only then is the message submitted.

A refusal is a ``ProblemError`` whose ``field`` member names what to fix
(``attachments[0].data``) and whose ``fix`` says how; the OpenAI routes turn it into their
error shape with ``param``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import mimetypes
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PureWindowsPath
from typing import Any

from starlette.requests import Request

from duragent.core.attachments import AttachmentKind
from duragent.gateways.http.api.multipart import FormPart, parse_form
from duragent.gateways.http.server.media_limits import UploadLimits, upload_limits
from duragent.gateways.http.server.problem import ProblemError
from duragent.gateways.http.server.security import read_body, read_json

__all__ = [
    "BASE64_PATTERN",
    "MIME_PATTERN",
    "NewMessage",
    "Upload",
    "check_count",
    "check_uploads",
    "decode_base64",
    "decoded_size",
    "kind_of",
    "read_message",
    "size_problem",
    "upload",
]

BASE64_PATTERN = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 (RFC 4648 §4) with its padding and no line breaks (the OpenAPI document's)."""
_BASE64_CHARS = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
"""With a length that is a multiple of 4, the same strings as ``BASE64_PATTERN``, faster."""
MIME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$"
"""A media type (``type/subtype``), parameters allowed and dropped."""
_MIME = re.compile(MIME_PATTERN)
_MAX_NAME_CHARS = 255
_VOICE_TYPES = frozenset({"audio/ogg", "audio/opus", "audio/webm"})
"""What voice notes are recorded as (Telegram's and WhatsApp's OGG/Opus, a browser's WebM)."""
_FALLBACK_MIME = "application/octet-stream"


@dataclass(frozen=True, slots=True)
class Upload:
    """One attachment of a request, checked (its kind's size) and not yet stored."""

    field: str
    """Where the request carried it (``attachments[0]``, ``messages[0].content[1]``)."""
    data: bytes
    kind: AttachmentKind
    mime: str
    name: str | None


def _refuse(status: int, field: str, detail: str, fix: str) -> ProblemError:
    return ProblemError(status, f"{field}: {detail}; {fix}", extra={"field": field, "fix": fix})


def _megabytes(size: int) -> str:
    """``size`` as a person reads it: bytes, KiB or MiB."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def kind_of(mime: str) -> AttachmentKind:
    """What a media type is (``image/*`` an image, OGG/Opus or WebM audio a voice note, …)."""
    major = mime.split("/", 1)[0]
    if major == "image":
        return AttachmentKind.IMAGE
    if mime in _VOICE_TYPES:
        return AttachmentKind.VOICE
    if major == "audio":
        return AttachmentKind.AUDIO
    if major == "video":
        return AttachmentKind.VIDEO
    return AttachmentKind.DOCUMENT


def clean_name(name: str | None) -> str | None:
    """A file name without folders or control characters (None when nothing is left)."""
    if name is None:
        return None
    base = PureWindowsPath(name.replace("\x00", "")).name  # both / and \ separate folders
    kept = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    if kept in ("", ".", ".."):
        return None
    return kept[:_MAX_NAME_CHARS]


def _mime(value: str | None, name: str | None, field: str) -> str:
    """The media type given (lower case, no parameters), else guessed from the name."""
    if value is not None:
        if _MIME.match(value) is None:  # as the schema's pattern reads: $ allows one \n
            raise _refuse(
                400,
                field,
                f"{value[:80]!r} is not a media type",
                "give one like image/png or application/pdf, or leave it out",
            )
        return value.split(";", 1)[0].strip().lower()
    guessed = mimetypes.guess_type(name)[0] if name else None
    return guessed or _FALLBACK_MIME


def size_problem(
    field: str, size: int, kind: AttachmentKind, name: str | None, limits: UploadLimits
) -> ProblemError:
    """413: an attachment over its kind's size."""
    limit = limits.of_kind(kind)
    what = f"{name} ({kind.value})" if name else f"this {kind.value}"
    return _refuse(
        413,
        field,
        f"{what} is {_megabytes(size)}, over the limit for its kind "
        f"({kind.value}: {_megabytes(limit)})",
        "send a smaller file",
    )


def upload(
    data: bytes,
    *,
    field: str,
    mime: str | None,
    name: str | None,
    mime_field: str,
    limits: UploadLimits,
) -> Upload:
    """An attachment checked against its kind's limit (``mime_field``: where its type was)."""
    cleaned = clean_name(name)
    essence = _mime(mime, cleaned, mime_field)
    kind = kind_of(essence)
    if len(data) > limits.of_kind(kind):
        raise size_problem(field, len(data), kind, cleaned, limits)
    return Upload(field, data, kind, essence, cleaned)


def decoded_size(text: str) -> int:
    """How many bytes base64 ``text`` decodes to (from its length: nothing decoded)."""
    text = text.removesuffix("\n")
    return len(text) // 4 * 3 - text[-2:].count("=")


async def decode_base64(text: str, field: str) -> bytes:
    """The bytes of standard base64 ``text`` (400 naming ``field`` when it is not that).

    One line break at the end is taken (``base64 FILE`` ends with one; the pattern's ``$``
    allows it too), none inside. Nothing at all is no file.
    """
    raw = text.encode("ascii", "replace").removesuffix(b"\n")
    if not raw or len(raw) % 4 or _BASE64_CHARS.fullmatch(raw) is None:
        raise _refuse(
            400,
            field,
            "this is not standard base64",
            "encode the file's bytes as base64 (RFC 4648, + and /, padded with =, no line "
            "breaks: `base64 -w0 FILE`)",
        )
    try:
        return await asyncio.to_thread(base64.b64decode, raw, validate=True)
    except binascii.Error as exc:  # pragma: no cover - the pattern above refused it already
        raise _refuse(400, field, f"this is not base64 ({exc})", "encode it again") from None


def check_count(count: int, where: str, limits: UploadLimits) -> None:
    """At most ``limits.count`` attachments in one message (400)."""
    if count > limits.count:
        raise _refuse(
            400,
            where,
            f"{count} attachments, more than the {limits.count} a message may carry",
            "send the rest in another message",
        )


def check_uploads(uploads: Sequence[Upload], where: str, limits: UploadLimits) -> None:
    """The limits of a message's attachments together: their count (400) and total (413)."""
    check_count(len(uploads), where, limits)
    total = sum(len(u.data) for u in uploads)
    if total > limits.total:
        raise _refuse(
            413,
            where,
            f"the attachments are {_megabytes(total)} together, over the "
            f"{_megabytes(limits.total)} one message may carry",
            "send some of them in another message",
        )


async def json_uploads(value: object, limits: UploadLimits) -> list[Upload]:
    """The ``attachments`` of a JSON message (``[{name, mime, data}]``), checked."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _refuse(
            400, "attachments", "must be a list", 'give [{"name", "mime", "data": base64}]'
        )
    check_count(len(value), "attachments", limits)
    found: list[Upload] = []
    for i, item in enumerate(value):
        field = f"attachments[{i}]"
        if not isinstance(item, Mapping):
            raise _refuse(400, field, "must be an object", 'give {"name", "mime", "data"}')
        found.append(await _json_upload(item, field, limits))
    check_uploads(found, "attachments", limits)
    return found


def _optional_text(item: Mapping[str, Any], key: str, field: str) -> str | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise _refuse(400, f"{field}.{key}", "must be a string", "give a string or leave it out")
    return value


async def _json_upload(item: Mapping[str, Any], field: str, limits: UploadLimits) -> Upload:
    name = _optional_text(item, "name", field)
    mime = _optional_text(item, "mime", field)
    data = item.get("data")
    if not isinstance(data, str) or not data:
        raise _refuse(
            400, f"{field}.data", "is required", "give the file's bytes as a base64 string"
        )
    cleaned = clean_name(name)
    kind = kind_of(_mime(mime, cleaned, f"{field}.mime"))
    if decoded_size(data) > limits.of_kind(kind):  # refused before it is decoded
        raise size_problem(field, decoded_size(data), kind, cleaned, limits)
    decoded = await decode_base64(data, f"{field}.data")
    return upload(
        decoded, field=field, mime=mime, name=name, mime_field=f"{field}.mime", limits=limits
    )


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message as ``POST …/messages`` or ``…/stream`` carried it: text and attachments."""

    content: str
    uploads: tuple[Upload, ...] = ()


_CONTENT_REQUIRED = "field 'content' is required and must be a non-empty string"


async def read_message(request: Request) -> NewMessage:
    """The message of a request, JSON or a form (400, 413 naming the field otherwise).

    ``content`` may be left out when the message carries attachments (a photo sent without
    a caption): it is then recorded as empty. Given, it must not be blank.
    """
    limits = upload_limits(request.scope)
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media == "multipart/form-data":
        return await _form_message(request, limits)
    body = await read_json(request)
    uploads = await json_uploads(body.get("attachments"), limits)
    if "content" not in body and uploads:
        return NewMessage("", tuple(uploads))
    content = body.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ProblemError(400, _CONTENT_REQUIRED + " (it may be left out with attachments)")
    return NewMessage(content, tuple(uploads))


async def _form_message(request: Request, limits: UploadLimits) -> NewMessage:
    """A ``multipart/form-data`` message: a ``content`` field and file parts."""
    body = await read_body(request)
    try:
        parts = parse_form(body, request.headers["content-type"])
    except ValueError as exc:
        raise ProblemError(400, f"the form cannot be read: {exc}") from None
    texts = [p for p in parts if p.name == "content" and p.filename is None]
    files = [p for p in parts if _is_file(p)]
    if any(p.name == "attachments" and p.filename is None for p in parts):
        raise _refuse(
            400,
            "attachments",
            "a part without a filename is not a file",
            'send each file as a file part (Content-Disposition: form-data; name="attachments"; '
            'filename="…"; curl -F attachments=@FILE)',
        )
    check_count(len(files), "attachments", limits)
    uploads = [_form_upload(part, f"attachments[{i}]", limits) for i, part in enumerate(files)]
    check_uploads(uploads, "attachments", limits)
    if len(texts) > 1:
        raise _refuse(400, "content", "given more than once", "send one content field")
    if not texts and uploads:
        return NewMessage("", tuple(uploads))
    try:
        content = texts[0].data.decode("utf-8") if texts else ""
    except UnicodeDecodeError:
        raise _refuse(400, "content", "is not UTF-8 text", "send the text as UTF-8") from None
    if not content.strip():
        raise ProblemError(400, _CONTENT_REQUIRED + " (it may be left out with files)")
    return NewMessage(content, tuple(uploads))


def _is_file(part: FormPart) -> bool:
    """A file part: one with a file name (RFC 7578), whatever its field's name.

    A form's file input left empty is sent as a part with an empty file name and no bytes:
    no file, not an empty one.
    """
    if part.filename == "" and not part.data:
        return False
    return part.filename is not None


def _form_upload(part: FormPart, field: str, limits: UploadLimits) -> Upload:
    mime = part.content_type
    if mime is not None and mime.split(";", 1)[0].strip().lower() == _FALLBACK_MIME:
        mime = None  # what a client says when it does not know: the name may tell
    return upload(
        part.data,
        field=field,
        mime=mime,
        name=part.filename,
        mime_field=f"{field} Content-Type",
        limits=limits,
    )
