"""OpenAI's chat-completions JSON: reading a request, writing a completion or an error.

Only the wire format lives here (no sessions, no turns: ``routes`` does that), so what
the SDK sees is reviewable in one place against OpenAI's API reference.

What a request means here (see ``specs/202611240850.openai-api-and-json-logs.md``):

- ``model`` names the agent.
- The new input is the **last** message, which must have role ``user``. The earlier messages
  are the client's copy of the conversation and are not read: the durable session is the
  source of truth (its history, its summaries, the agent's own system prompt), so a client
  cannot rewrite what the agent remembers, and resending them costs nothing.
- Content is a string or a list of parts: ``text`` parts (joined by newlines) and
  ``image_url`` parts whose URL is a ``data:`` URL (``data:image/png;base64,…``), kept as
  the message's image attachments (``parts``). A remote ``http(s)`` image URL is refused
  with 400: the server never fetches a URL a client names (it could be made to reach
  addresses only it can see); send the image inline. Other parts (audio, files) are refused
  with 400 rather than silently dropped.
- Sampling fields (``temperature``, ``max_tokens``, ``tools``…) are accepted and ignored:
  the agent's YAML decides them, and tools run on the server.

Files the agent sends with its reply (``send_file``) are listed in the ``duragent`` extension
(``attachments``: kind, mime, size, sha256, name, caption and the ``url`` of their bytes, as
``GET /api/v1/sessions/{id}/messages`` lists them), not in ``content``. OpenAI's message has
no place for a file, and a markdown link in the content would not open: the path is the
server's, a chat client resolves it against its own page; an absolute address needs the
server's public one, which a request does not tell (a proxy, a forward between nodes); and
the download asks for the API's bearer token, which a link does not carry. The content
stays the agent's words, the same streamed or not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse

from duragent.core.clock import now_seconds
from duragent.gateways.http.api.attachments import reply_file_views
from duragent.gateways.http.server.media_limits import MAX_ATTACHMENTS
from duragent.turns import AwaitingApproval, Complete, Duplicate, Failed, Interruption, TurnResult

__all__ = [
    "SESSION_HEADER",
    "ImagePart",
    "OpenAIChatRequest",
    "OpenAIError",
    "approval_text",
    "completion",
    "completion_id",
    "dumps",
    "error_body",
    "error_response",
    "extension",
    "finish_reason",
    "parse_chat_request",
    "reply_text",
    "usage_body",
]

SESSION_HEADER = "X-Duragent-Session"
"""The request header naming the conversation (like the ``session_id`` field)."""

MAX_KEY_CHARS = 200
"""The longest conversation key (session_id / header / user) accepted."""

_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
_CODES: Mapping[int, str] = {
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    413: "request_too_large",
    429: "rate_limit_exceeded",
}


class OpenAIError(Exception):
    """Answered as ``{"error": {message, type, param, code}}`` with ``status``.

    ``retry=False`` adds ``x-should-retry: false``, which the OpenAI SDKs obey: a retry of a
    request whose message was already recorded would record it a second time.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        retry: bool | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = dict(headers or {})
        if retry is not None:
            self.headers["x-should-retry"] = "true" if retry else "false"


def error_body(
    status: int, message: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object for ``status``."""
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {
        "error": {
            "message": message,
            "type": kind,
            "param": param,
            "code": code if code is not None else _CODES.get(status),
        }
    }


def error_response(exc: OpenAIError) -> JSONResponse:
    """The response for ``exc``."""
    body = error_body(exc.status, exc.message, code=exc.code, param=exc.param)
    return JSONResponse(body, status_code=exc.status, headers=exc.headers)


def _bad(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, param=param, code=code or "invalid_value")


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An ``image_url`` part with a ``data:`` URL, not yet decoded (``parts`` does that)."""

    field: str
    """Where it was: ``messages[0].content[1]`` (its URL is ``….image_url.url``)."""
    mime: str
    data: str
    """The URL's base64 text."""


@dataclass(frozen=True, slots=True)
class OpenAIChatRequest:
    """What a ``POST /v1/chat/completions`` asks for."""

    model: str
    content: str
    key: str | None
    """The conversation key (``session_id``, then the header, then ``user``); None: fresh."""
    stream: bool
    include_usage: bool
    images: tuple[ImagePart, ...] = ()
    """The new message's images (``data:`` URLs), kept as its attachments."""


_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),(.*)", re.DOTALL | re.IGNORECASE)


def _image_of(part: Mapping[str, Any], at: str) -> ImagePart:
    """An ``image_url`` part: a ``data:`` URL of an image (400 for anything else)."""
    field = f"{at}.image_url.url"
    holder = part.get("image_url")
    url = holder.get("url") if isinstance(holder, dict) else holder
    if not isinstance(url, str):
        raise _bad(f"{at}.image_url.url must be a string (a data: URL)", field)
    if url[:8].lower().startswith(("http://", "https://")):
        raise _bad(
            f"{field}: this server does not fetch images from URLs (it would reach whatever "
            "address a client names); send the image inline as a data: URL "
            "(data:image/png;base64,…)",
            field,
            "unsupported_value",
        )
    found = _DATA_URL.fullmatch(url)
    flags = [flag.strip().lower() for flag in found[2].split(";")] if found else []
    if found is None or "base64" not in flags:
        raise _bad(f"{field} must be a base64 data: URL (data:image/png;base64,…)", field)
    mime = found[1].strip().lower()
    if not mime.startswith("image/"):
        raise _bad(f"{field} is {mime or 'untyped'}: only images are taken here", field)
    return ImagePart(at, mime, found[3])


def _input_of(content: object, where: str) -> tuple[str, tuple[ImagePart, ...]]:
    """The text (parts joined by newlines) and the images of a message's ``content``."""
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise _bad(f"{where}.content must be a string or a list of parts", where)
    texts: list[str] = []
    images: list[ImagePart] = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        if isinstance(part, dict) and kind == "image_url":
            images.append(_image_of(part, f"{where}.content[{i}]"))
            continue
        if not isinstance(part, dict) or kind != "text":
            raise _bad(
                f"{where}.content[{i}] is of type {kind!r}: only text and image_url parts are "
                "supported (an agent's model and tools are configured on the server)",
                f"{where}.content",
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise _bad(f"{where}.content[{i}].text must be a string", f"{where}.content")
        texts.append(text)
    if len(images) > MAX_ATTACHMENTS:
        raise _bad(
            f"{where}.content has {len(images)} images, more than the {MAX_ATTACHMENTS} a "
            "message may carry",
            f"{where}.content",
        )
    return "\n".join(texts), tuple(images)


def _key(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{name} must be a non-empty string", name)
    if len(value) > MAX_KEY_CHARS or any(ord(c) < 32 for c in value):
        raise _bad(f"{name} must be at most {MAX_KEY_CHARS} printable characters", name)
    return value


def parse_chat_request(body: Mapping[str, Any], header_key: str | None) -> OpenAIChatRequest:
    """Read and check a request body (400 naming the field on any mistake)."""
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _bad("model is required: the name of the agent to talk to", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _bad(f"messages[{i}] must be an object with a string 'role'", "messages")
    last = messages[-1]
    where = f"messages[{len(messages) - 1}]"
    if last["role"] != "user":
        raise _bad(
            f"the last message ({where}) must have role 'user': it is the new input (earlier "
            "messages are the client's copy; the server keeps the conversation)",
            "messages",
        )
    content, images = _input_of(last.get("content"), where)
    if not content.strip() and not images:
        raise _bad(f"{where}.content is empty", f"{where}.content")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise _bad("stream must be true or false", "stream")
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not isinstance(options, dict):
            raise _bad("stream_options must be an object", "stream_options")
        raw = options.get("include_usage", False)
        if not isinstance(raw, bool):
            raise _bad("stream_options.include_usage must be true or false", "stream_options")
        include_usage = raw
    keys = (  # all checked, even those a first one overrides
        _key(body.get("session_id"), "session_id"),
        _key(header_key, SESSION_HEADER),
        _key(body.get("user"), "user"),
    )
    key = next((k for k in keys if k is not None), None)
    return OpenAIChatRequest(model, content, key, bool(stream), include_usage, images)


def completion_id(turn_id: str) -> str:
    """The completion's id: OpenAI's ``chatcmpl-`` prefix on the turn's ULID (one per turn)."""
    return "chatcmpl-" + turn_id.removeprefix("turn_")


def usage_body(result: TurnResult) -> dict[str, int]:
    """OpenAI's usage object for the turn (every model call of it, tools rounds included)."""
    usage = result.usage if isinstance(result, Complete | AwaitingApproval) else None
    prompt = usage.prompt_tokens if usage else 0
    done = usage.completion_tokens if usage else 0
    return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}


def approval_text(result: AwaitingApproval) -> str:
    """The reply a person reads when a tool call waits for their decision."""
    return (
        f"Approval needed: the agent wants to run `{result.command}` (call {result.call_id}). "
        f"Approve or deny with POST /api/v1/sessions/{result.session_id}/approve "
        f'{{"call_id": "{result.call_id}", "decision": "allow_once"}} (or "allow_always", '
        '"deny"). Sending another message instead denies it and starts a new turn.'
    )


def reply_text(result: TurnResult) -> str:
    """The reply ``result`` holds (Failed is an error, not a reply).

    Only the final reply (and those to messages that came while it was written): the words
    before a tool call are not in it. What a completion says is ``text.TurnText``'s.
    """
    match result:
        case Complete(content=content, earlier=earlier):
            return "\n\n".join([*earlier, content])
        case AwaitingApproval():
            return approval_text(result)
        case Duplicate(interruption=Interruption(reply=str(reply))):  # cut, then went on
            return reply
        case Duplicate() | Failed():
            return ""


def finish_reason(result: TurnResult) -> str:
    """``stop`` for every outcome: tool calls ran (or wait) on the server, never the client's.

    ``tool_calls`` would tell a client to run tools itself; a pending approval is told by the
    ``duragent.status`` extension (``awaiting_approval``) and the reply's words.
    """
    del result
    return "stop"


def extension(result: TurnResult, turn_id: str) -> dict[str, Any]:
    """The ``duragent`` member of a completion (OpenAI clients ignore unknown members)."""
    out: dict[str, Any] = {
        "session_id": result.session_id,
        "turn_id": turn_id,
        "status": result.status,
    }
    if isinstance(result, Complete) and result.attachments:  # the files the reply carries
        out["attachments"] = reply_file_views(result.session_id, result.attachments)
    if isinstance(result, Complete | Duplicate) and result.interruption is not None:
        out["interruption"] = result.interruption.to_dict()  # what became of the cut turn
        if result.interruption.reply is not None:
            out["status"] = Complete.status  # answered, by the turn that went on
    if isinstance(result, AwaitingApproval):
        out["approval"] = {
            "call_id": result.call_id,
            "command": result.command,
            "approve_url": f"/api/v1/sessions/{result.session_id}/approve",
            "decisions": ["allow_once", "allow_always", "deny"],
        }
    return out


def completion(result: TurnResult, content: str, model: str, turn_id: str) -> dict[str, Any]:
    """A ``chat.completion`` object for a turn that ended (not Failed) saying ``content``.

    ``content`` is what the stream of the same turn would have sent (``text.TextSink``).
    """
    return {
        "id": completion_id(turn_id),
        "object": "chat.completion",
        "created": int(now_seconds()),
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": finish_reason(result),
            }
        ],
        "usage": usage_body(result),
        "duragent": extension(result, turn_id),
    }


def dumps(data: object) -> str:
    """Compact JSON, as OpenAI's stream writes it."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
