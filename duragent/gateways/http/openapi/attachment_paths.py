"""The OpenAPI parts of attachments, merged into ``document``.

In: a message's body (``POST …/messages`` and ``…/stream``), JSON with base64 attachments or
a ``multipart/form-data`` form (``api.uploads``). Out: the ``Attachment`` of history, the
console and the stream's ``start`` event, of a reply that carries the agent's files
(``send_file``: the reply, the stream's ``done``, the OpenAI completion's ``duragent``
extension, each with its ``caption``), and the path of its bytes (``api.attachments``).
The request schemas say exactly what the server takes (the fuzz test holds it to them): the
base64 and media type patterns are the ones the server checks.
"""

from __future__ import annotations

from typing import Any

from duragent.gateways.http.api.attachments import DOWNLOAD_HEADERS
from duragent.gateways.http.api.uploads import BASE64_PATTERN, MIME_PATTERN
from duragent.gateways.http.openapi.schemas import (
    AUTH,
    NON_BLANK,
    SESSION_ID,
    STORAGE,
    problem,
    ref,
)
from duragent.gateways.http.server.media_limits import DEFAULT_LIMITS, MAX_ATTACHMENTS

__all__ = ["attachment_paths", "attachment_schemas", "message_body"]

_MIB = 1024 * 1024
_TEXT = {"type": "string"}


def _limits() -> str:
    limits = DEFAULT_LIMITS
    sizes = ", ".join(f"{kind.value} {size // _MIB} MiB" for kind, size in limits.kinds.items())
    return (
        f"At most {limits.count} attachments, {limits.total // _MIB} MiB together; each at "
        f"most its kind's size (media.max_bytes in duragent.yaml; by default {sizes}): 413 "
        "beyond, the problem's `field` naming it. "
        "The kind comes from the media type (image/*; audio/ogg, audio/opus and audio/webm are "
        "voice notes; other audio/*; video/*; anything else a document); a type left out is "
        "guessed from the file name. `content` may be left out when there are attachments."
    )


def message_body() -> dict[str, Any]:
    """``POST …/messages`` and ``…/stream``: a message, as JSON or as a form with files."""
    with_files = {"required": ["attachments"], "properties": {"attachments": {"minItems": 1}}}
    files = {
        "type": "array",
        "maxItems": MAX_ATTACHMENTS,
        "items": {"type": "string", "format": "binary"},
        "description": "File parts (any part with a filename is one): each one's filename "
        "and Content-Type describe it",
    }
    return {
        "required": True,
        "description": _limits(),
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "content": NON_BLANK,
                        "attachments": {
                            "type": ["array", "null"],
                            "maxItems": MAX_ATTACHMENTS,
                            "items": ref("AttachmentUpload"),
                        },
                    },
                    "anyOf": [{"required": ["content"]}, with_files],
                }
            },
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"content": NON_BLANK, "attachments": files},
                    "anyOf": [{"required": ["content"]}, with_files],
                },
            },
        },
    }


def attachment_schemas() -> dict[str, Any]:
    """``Attachment`` (shown) and ``AttachmentUpload`` (sent), for ``components.schemas``."""
    count = {"type": "integer", "minimum": 0}
    shown = {
        "type": "object",
        "required": ["kind", "mime", "size", "sha256", "url"],
        "properties": {
            "kind": {"enum": ["image", "voice", "audio", "video", "document"]},
            "mime": _TEXT,
            "size": count,
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "url": {
                **_TEXT,
                "description": "The path of its bytes: "
                "GET /api/v1/sessions/{session_id}/attachments/{sha256}",
            },
            "name": _TEXT,
            "platform_id": {**_TEXT, "description": "The chat platform's id of the file"},
            "transcript": {**_TEXT, "description": "A voice note's text, once transcribed"},
            "caption": {
                **_TEXT,
                "description": "A file the agent sent with its reply: the caption it goes with",
            },
            "width": count,
            "height": count,
        },
    }
    sent = {
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {
                "type": "string",
                "minLength": 4,
                "pattern": BASE64_PATTERN,
                "contentEncoding": "base64",
                "description": "The file's bytes: standard base64, padded, no line breaks",
            },
            "name": {"type": ["string", "null"], "description": "Its file name"},
            "mime": {
                "anyOf": [{"type": "null"}, {"type": "string", "pattern": MIME_PATTERN}],
                "description": "Its media type (parameters dropped); left out, guessed from "
                "the name",
            },
        },
    }
    return {"Attachment": shown, "AttachmentUpload": sent}


def attachment_paths() -> dict[str, Any]:
    """``GET /api/v1/sessions/{session_id}/attachments/{sha256}``."""
    headers: dict[str, Any] = {
        name: {"schema": {"const": value}, "description": "Always sent"}
        for name, value in DOWNLOAD_HEADERS.items()
    }
    headers["Content-Disposition"] = {
        "schema": _TEXT,
        "description": "attachment, with its file name (ASCII filename and UTF-8 filename*)",
    }
    return {
        "/api/v1/sessions/{session_id}/attachments/{sha256}": {
            "get": {
                "summary": "The bytes of an attachment a message of the session carried",
                "description": "The url of an attachment in GET …/messages (a user's file, or "
                "one the agent sent with a reply). Content-Type is the type recorded for it; "
                "it is always served as a download.",
                "parameters": [
                    SESSION_ID,
                    {
                        "name": "sha256",
                        "in": "path",
                        "required": True,
                        "schema": _TEXT,
                        "description": "The attachment's sha256 (64 lowercase hex digits)",
                    },
                ],
                "responses": {
                    "200": {
                        "description": "The file",
                        "headers": headers,
                        "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
                    },
                    "404": problem("No such session, or no message of it carried this file"),
                    "409": problem("Session quarantined"),
                    **AUTH,
                    **STORAGE,
                },
            }
        }
    }
