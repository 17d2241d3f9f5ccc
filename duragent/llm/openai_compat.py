"""OpenAI-compatible chat completions: OpenAI, OpenRouter, Ollama and any ``base_url``.

Translates messages and tools, posts ``{base_url}/chat/completions`` through its own
``aiohttp.ClientSession``, reads the answer as JSON (streamed: ``_sse.chat_chunks``), errors
mapped through ``_http_errors``.

Why not the ``openai`` SDK, which this was built on: with the body pre-built (``_wire_body``)
and chunks read as plain JSON, its request machinery (an httpx request, headers and URL per
call, an idempotency key, a deep copy of the options, its send path and stream wrappers) was
what was left of a call's cost (0.45–0.75 ms of serving CPU). What it did that matters to a
server is done here (spec ``202612050800.openai-transport.md``): the same body bytes, URL and
``Authorization``, ``Content-Type`` and ``Accept`` headers, ``OpenAI-Organization``/
``OpenAI-Project`` from ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``, its timeouts, proxies from the
environment, redirects, its error message for a non-2xx answer (retries: ``ResilientProvider``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from duragent import __version__
from duragent.core.messages import Message, Role, ToolCall, Usage
from duragent.errors import LLMConnectionError, LLMError, LLMResponseError
from duragent.llm._http_errors import (
    connection_failure,
    error_for_status,
    status_message,
    timeout_or_connection,
)
from duragent.llm._json_fields import integer, items, obj, text
from duragent.llm._sse import chat_chunks
from duragent.llm._wire_body import FragmentCache, dumps, json_array, json_object
from duragent.llm.image_parts import openai_user_content, openai_user_fragment
from duragent.llm.limits import ReplyGuard, checked_calls, repair_text
from duragent.llm.types import (
    ChatRequest,
    ChatResponse,
    ImageMessage,
    ResponseDone,
    StreamEvent,
    StreamProgress,
    TextDelta,
)

__all__ = ["OpenAICompatibleProvider", "to_openai_messages"]

log = logging.getLogger(__name__)

_PROGRESS = StreamProgress()
_MAX_NAME = 256
"""A tool name or call id longer than this is not taken (a name is looked up, never run)."""


def _openai_message(m: Message) -> dict[str, Any]:
    if m.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text}
    if m.role is Role.ASSISTANT and m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in m.tool_calls
            ],
        }
    if type(m) is ImageMessage:  # its images as ``image_url`` parts after its text
        return {"role": "user", "content": openai_user_content(m.text, m.images)}
    return {"role": m.role.value, "content": m.text}


def to_openai_messages(messages: list[Message] | tuple[Message, ...]) -> list[dict[str, Any]]:
    """Messages in the chat-completions wire format."""
    return [_openai_message(m) for m in messages]


def _fragment(m: Message) -> bytes:
    """A message's serialised wire form (an image's part is serialised once per image)."""
    if type(m) is ImageMessage:
        return openai_user_fragment(m.text, m.images)
    return dumps(_openai_message(m))


_FRAGMENTS: FragmentCache[bytes] = FragmentCache(_fragment)  # kept while the message lives


_USER_AGENT = f"duragent/{__version__}"
_MAX_CONNECTIONS = 1000
"""The SDK's connection limit per client (aiohttp's own default, 100, would queue turns)."""
_KEEPALIVE_SECONDS = 5.0
"""How long an idle connection is kept for reuse (the SDK's ``keepalive_expiry``)."""


def _map_error(exc: Exception, provider: str) -> LLMError:
    """A transport failure as the SDK's timeout and connection errors were mapped."""
    if isinstance(exc, TimeoutError):  # aiohttp's connect and read timeouts included
        return timeout_or_connection(exc, provider)
    if isinstance(exc, aiohttp.ClientError):
        return connection_failure(exc, provider)
    return LLMResponseError(f"{provider}: unreadable response: {exc}", provider=provider)


def chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, joined as the SDK joins it (one slash in between)."""
    return (base_url if base_url.endswith("/") else base_url + "/") + "chat/completions"


def _env_proxy(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy ``HTTP(S)_PROXY``/``NO_PROXY`` give for ``url``, read once, as httpx did.

    Not aiohttp's ``trust_env``: that looks the proxy and ``~/.netrc`` up again on every
    request, each in a worker thread (two thread hops per model call).
    """
    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None


def _count(raw: dict[str, Any], key: str) -> int:
    """A token count of a plain answer, read as leniently as the SDK's model did."""
    return int(raw.get(key) or 0)


def _usage_of(raw: dict[str, Any]) -> Usage:
    """Usage from a streamed chunk's plain JSON."""
    return Usage(
        prompt_tokens=integer(raw, "prompt_tokens"),
        completion_tokens=integer(raw, "completion_tokens"),
    )


class OpenAICompatibleProvider:
    """A chat-completions endpoint reached over the provider's own aiohttp session."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        api_key: str | None,
        timeout_seconds: float = 300,
        default_headers: dict[str, str] | None = None,
        organization: str | None = None,
        project: str | None = None,
    ) -> None:
        """``api_key`` ``None`` or empty: no ``Authorization`` header (a local server).

        ``organization``/``project`` default to ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``, as
        the SDK read them; ``default_headers`` are sent with every request and win.
        """
        self.name = name
        self.model = model
        self._url = chat_url(base_url)
        headers: dict[str, str] = {}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        headers["Accept"] = "application/json"
        headers["Content-Type"] = "application/json"
        headers["User-Agent"] = _USER_AGENT
        organization = organization or os.environ.get("OPENAI_ORG_ID")
        project = project or os.environ.get("OPENAI_PROJECT_ID")
        if organization:
            headers["OpenAI-Organization"] = organization
        if project:
            headers["OpenAI-Project"] = project
        headers.update(default_headers or {})
        self._headers = headers
        # The SDK's float timeout: connect, pool and each read limited, the whole call not
        # (ResilientProvider owns the call's deadline).
        self._timeout = aiohttp.ClientTimeout(
            total=None,
            connect=timeout_seconds,
            sock_connect=timeout_seconds,
            sock_read=timeout_seconds,
        )
        self._proxy, self._proxy_auth = _env_proxy(self._url)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        """The session, made on first use: aiohttp binds it to the running loop."""
        session = self._session
        if session is None:
            session = self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=_MAX_CONNECTIONS, keepalive_timeout=_KEEPALIVE_SECONDS
                ),
                headers=self._headers,
                timeout=self._timeout,
            )
        return session

    async def _body(self, request: ChatRequest, *, stream: bool) -> bytes:
        """The request body as the SDK's ``create()`` would send it, byte for byte.

        Same keys in the same order as the SDK's transform leaves them; the messages are
        joined from cached per-message fragments instead of being transformed on every call.
        """
        fragments = await _FRAGMENTS.fragments(request.messages)
        fields: list[tuple[str, bytes | list[bytes]]] = [("model", dumps(self.model))]
        if stream:
            fields.append(("stream", b"true"))
        fields.append(("messages", json_array(fragments)))
        if request.max_output_tokens is not None:
            fields.append(("max_tokens", dumps(request.max_output_tokens)))
        if stream:
            fields.append(("stream_options", b'{"include_usage":true}'))
        if request.temperature is not None:
            fields.append(("temperature", dumps(request.temperature)))
        if request.tools:
            fields.append(("tools", dumps([t.to_openai() for t in request.tools])))
        return json_object(fields)

    async def _post(self, request: ChatRequest, *, stream: bool) -> aiohttp.ClientResponse:
        """``POST /chat/completions`` with a pre-built body; a non-2xx answer raises.

        The caller releases the response (its body read to the end, the connection is kept
        for the next call; read part-way, it is closed).
        """
        body = await self._body(request, stream=stream)
        response = await self._client().post(
            self._url, data=body, proxy=self._proxy, proxy_auth=self._proxy_auth
        )
        log.debug("model call: POST %s: %d", self._url, response.status)  # one line, as httpx's
        if 200 <= response.status < 300:
            return response
        try:
            message, code = status_message(response.status, await response.read())
        finally:
            response.release()
        raise error_for_status(
            response.status,
            f"{self.name} answered {response.status}: {message}",
            provider=self.name,
            headers=response.headers,
            details=(code,),
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One non-streaming chat completion."""
        try:
            response = await self._post(request, stream=False)
            try:
                raw = await response.read()
            finally:
                response.release()
        except LLMError:
            raise
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise LLMResponseError(
                f"{self.name}: unreadable response: {exc}", provider=self.name
            ) from exc
        try:
            return self._response(answer, request)
        except (IndexError, TypeError, ValueError) as exc:
            raise LLMResponseError(
                f"{self.name}: response has no usable choice: {exc}", provider=self.name
            ) from exc

    def _response(self, answer: Any, request: ChatRequest) -> ChatResponse:
        """A plain answer's first choice; a wrong shape raises ``IndexError``/``ValueError``."""
        raw = obj(answer, "response")
        choice = obj(items(raw, "choices")[0], "choice")
        msg = obj(choice.get("message"), "message")
        calls = []
        for i, raw_call in enumerate(items(msg, "tool_calls")):
            call = obj(raw_call, "tool_call")
            if call.get("function") is None:
                continue
            function = obj(call["function"], "function")
            calls.append(
                ToolCall(
                    id=text(call, "id") or f"call_{i}",
                    name=text(function, "name") or "",
                    arguments=text(function, "arguments") or "{}",
                )
            )
        usage = raw.get("usage")
        return ChatResponse(
            content=repair_text(text(msg, "content") or ""),
            tool_calls=checked_calls(calls, request.limits),
            usage=None
            if usage is None
            else Usage(
                prompt_tokens=_count(obj(usage, "usage"), "prompt_tokens"),
                completion_tokens=_count(usage, "completion_tokens"),
            ),
            finish_reason=text(choice, "finish_reason"),
            model=text(raw, "model"),
        )

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream text deltas; tool-call fragments are assembled into the final response."""
        guard = ReplyGuard(request.limits)
        calls: dict[int, dict[str, str]] = {}
        usage: Usage | None = None
        finish: str | None = None
        model: str | None = None
        received = 0
        try:
            response = await self._post(request, stream=True)
            chunks = chat_chunks(response.content, self.name)
            try:
                async for data in chunks:
                    received += 1
                    chunk = obj(data)
                    model = text(chunk, "model") or model
                    if chunk.get("usage") is not None:
                        usage = _usage_of(obj(chunk["usage"], "usage"))
                    shown = False
                    for raw_choice in items(chunk, "choices"):
                        choice = obj(raw_choice, "choice")
                        finish = text(choice, "finish_reason") or finish
                        delta = obj(choice.get("delta"), "delta")
                        content = text(delta, "content")
                        if content:
                            piece = guard.text(content)
                            if piece:
                                shown = True
                                yield TextDelta(piece)
                        for raw_frag in items(delta, "tool_calls"):
                            frag = obj(raw_frag, "tool_call")
                            index = integer(frag, "index")
                            slot = calls.get(index)
                            if slot is None:
                                slot = calls[index] = {"id": "", "name": ""}
                                guard.new_call()
                            call_id = text(frag, "id")
                            if call_id and len(call_id) <= _MAX_NAME:
                                slot["id"] = call_id
                            if frag.get("function") is not None:
                                function = obj(frag["function"], "function")
                                name = text(function, "name") or ""
                                # OpenAI sends the name once; some compatible servers repeat it
                                # in every fragment, which must not double it.
                                if name != slot["name"] and len(slot["name"]) < _MAX_NAME:
                                    slot["name"] += name
                                guard.argument(index, text(function, "arguments") or "")
                    if not shown:
                        yield _PROGRESS
                    if guard.stopped:  # past a limit: stop reading (the connection is dropped)
                        finish = "length"
                        break
            finally:
                await chunks.aclose()
                response.release()  # read to its end, the connection is kept, else closed
        except LLMError:
            raise
        except aiohttp.ClientError as exc:  # before ValueError: aiohttp's InvalidURL is one
            raise _map_error(exc, self.name) from exc
        except ValueError as exc:  # JSON, UTF-8 or a field of the wrong type
            raise LLMResponseError(
                f"{self.name}: malformed stream data: {exc}", provider=self.name
            ) from exc
        except Exception as exc:
            raise _map_error(exc, self.name) from exc
        if finish is None:
            # Every complete stream ends with a chunk carrying finish_reason; without it the
            # answer was cut short (a proxy closed the stream, or the body was not SSE at all).
            if not received:
                raise LLMResponseError(
                    f"{self.name}: the streamed answer carried no chunks", provider=self.name
                )
            raise LLMConnectionError(
                f"{self.name}: the stream ended before its final chunk", provider=self.name
            )
        if guard.note:
            yield TextDelta(guard.note)
        heads = ((i, c["id"] or f"call_{i}", c["name"]) for i, c in sorted(calls.items()))
        yield ResponseDone(
            ChatResponse(
                content=guard.content,
                tool_calls=guard.calls(heads),
                usage=usage,
                finish_reason=finish,
                model=model,
            )
        )

    async def aclose(self) -> None:
        """Close the HTTP session (its connections)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
