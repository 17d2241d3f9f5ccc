"""The OpenAPI paths of the OpenAI-compatible API (``openai.routes``), merged into ``document``.

Errors here are OpenAI's error object in ``application/json`` (``openai.errors`` rewrites
the shared code's problem+json), so these paths have their own response helpers. The
request schema lists only the fields the server checks: a field it ignores (``temperature``,
``tools``…) is allowed by ``additionalProperties`` and never refused, so the fuzz test's
"invalid input is rejected" check holds for exactly what the document describes.
"""

from __future__ import annotations

from typing import Any

from duragent.gateways.http.openai.wire import MAX_KEY_CHARS, SESSION_HEADER
from duragent.gateways.http.openapi.schemas import (
    NON_BLANK,
    REPLY_FILES,
    json_body,
    json_response,
)

__all__ = ["openai_paths"]

_TEXT = {"type": "string"}
_NULLABLE_TEXT = {"type": ["string", "null"]}


def _error(description: str) -> dict[str, Any]:
    """An error in OpenAI's shape."""
    detail = {
        "type": "object",
        "required": ["message", "type", "param", "code"],
        "properties": {
            "message": _TEXT,
            "type": _TEXT,
            "param": _NULLABLE_TEXT,
            "code": _NULLABLE_TEXT,
        },
    }
    schema = {"type": "object", "required": ["error"], "properties": {"error": detail}}
    return json_response(schema, description)


_ERRORS = {
    "400": _error("Bad request: ``error.param`` names the field"),
    "401": _error("Missing or invalid bearer token, or a non-loopback client"),
    "403": _error("A browser request refused: Host or Origin not allowed"),
    "415": _error("Body not application/json"),
    "503": _error("The disk refused a read or write, or the server is stopping"),
    "507": _error("The disk is full: nothing was recorded"),
}

_KEY = {
    "type": ["string", "null"],
    "minLength": 1,
    "maxLength": MAX_KEY_CHARS,
    "pattern": "^[^\\u0000-\\u001f]*\\S[^\\u0000-\\u001f]*$",
}

_REQUEST = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {**NON_BLANK, "description": "The agent's name"},
        "messages": {
            "type": "array",
            "minItems": 1,
            "description": "The last message (role user) is the new input; earlier ones are "
            "the client's copy and are not read: the server keeps the conversation",
            "items": {"type": "object", "required": ["role"], "properties": {"role": _TEXT}},
        },
        "stream": {"type": ["boolean", "null"]},
        "stream_options": {
            "type": ["object", "null"],
            "properties": {"include_usage": {"type": "boolean"}},
        },
        "session_id": {
            **_KEY,
            "description": "The conversation: a session id this API returned, or any name of "
            f"the client's (then {SESSION_HEADER}, then user)",
        },
        "user": {
            **_KEY,
            "description": "The conversation, when neither session_id nor the header names it",
        },
    },
}

_USAGE = {
    "type": "object",
    "required": ["prompt_tokens", "completion_tokens", "total_tokens"],
    "properties": {
        "prompt_tokens": {"type": "integer"},
        "completion_tokens": {"type": "integer"},
        "total_tokens": {"type": "integer"},
    },
}

_EXTENSION = {
    "type": "object",
    "required": ["session_id", "turn_id", "status"],
    "properties": {
        "session_id": _TEXT,
        "turn_id": _TEXT,
        "status": {"enum": ["complete", "awaiting_approval", "duplicate"]},
        "approval": {"type": "object", "required": ["call_id", "command", "approve_url"]},
        "attachments": {
            **REPLY_FILES,
            "description": "The files the agent sent with the reply (send_file), each with the "
            "url of its bytes (the API's bearer token); not in the content: OpenAI's message "
            "has no place for a file. Present only when there are some",
        },
    },
}

_COMPLETION = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices", "usage", "duragent"],
    "properties": {
        "id": _TEXT,
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": _TEXT,
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "message", "finish_reason"],
                "properties": {
                    "message": {
                        "type": "object",
                        "required": ["role", "content"],
                        "properties": {"role": {"const": "assistant"}, "content": _TEXT},
                    },
                    "finish_reason": {"const": "stop"},
                },
            },
        },
        "usage": _USAGE,
        "duragent": _EXTENSION,
    },
}

_CHUNK = {
    "type": "object",
    "properties": {
        "object": {"const": "chat.completion.chunk"},
        "choices": {"type": "array"},
        "usage": {"oneOf": [_USAGE, {"type": "null"}]},
        "error": {"type": "object", "required": ["message", "type"]},
    },
}

_STREAM_EVENT = {
    "anyOf": [
        {"type": "object", "required": ["data"], "properties": {"data": {"const": "[DONE]"}}},
        {
            "type": "object",
            "required": ["data"],
            "properties": {
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": _CHUNK,
                }
            },
        },
    ]
}

_MODEL = {
    "type": "object",
    "required": ["id", "object", "owned_by"],
    "properties": {"id": _TEXT, "object": {"const": "model"}, "owned_by": _TEXT},
}


def openai_paths() -> dict[str, Any]:
    """``/v1/models``, ``/v1/models/{model}`` and ``/v1/chat/completions``."""
    turn_headers = {
        "X-Duragent-Turn": {"schema": _TEXT, "description": "The turn (as in the logs)"},
        SESSION_HEADER: {"schema": _TEXT, "description": "The session that took the turn"},
    }
    return {
        "/v1/models": {
            "get": {
                "summary": "OpenAI-compatible: the agents, as models",
                "responses": {
                    "200": json_response(
                        {
                            "type": "object",
                            "required": ["object", "data"],
                            "properties": {
                                "object": {"const": "list"},
                                "data": {"type": "array", "items": _MODEL},
                            },
                        }
                    ),
                    "401": _ERRORS["401"],
                    "403": _ERRORS["403"],
                },
            }
        },
        "/v1/models/{model}": {
            "get": {
                "summary": "OpenAI-compatible: one agent, as a model",
                "parameters": [{"name": "model", "in": "path", "required": True, "schema": _TEXT}],
                "responses": {
                    "200": json_response(_MODEL),
                    "404": _error("No agent of that name"),
                    "401": _ERRORS["401"],
                    "403": _ERRORS["403"],
                },
            }
        },
        "/v1/chat/completions": {
            "post": {
                "summary": "OpenAI-compatible: one turn of the agent named by model",
                "parameters": [
                    {
                        "name": SESSION_HEADER,
                        "in": "header",
                        "required": False,
                        "schema": {**_KEY, "type": "string"},
                        "description": "The conversation, when the body's session_id does not",
                    }
                ],
                "requestBody": json_body(_REQUEST),
                "responses": {
                    "200": {
                        "description": "The completion; with stream, chat.completion.chunk "
                        "events then data: [DONE]",
                        "headers": turn_headers,
                        "content": {
                            "application/json": {"schema": _COMPLETION},
                            "text/event-stream": {"schema": _STREAM_EVENT},
                        },
                    },
                    "404": _error("No such model (agent), or the session has ended"),
                    "408": _error("The turn outlived request_timeout_seconds; it continues"),
                    "409": _error(
                        "The session is quarantined, or its pins no longer fit the agent "
                        "(the message names them and how to unpin)"
                    ),
                    "413": _error("Body too large"),
                    "502": _error("The model failed (recorded; not to be retried)"),
                    **_ERRORS,
                },
            }
        },
    }
