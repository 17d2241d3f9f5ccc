"""A scripted fake LLM server that speaks the real OpenAI and Anthropic wire formats over HTTP.

Tests and benchmarks point the real SDK-based providers at it instead of a paid API, so the
whole client path — HTTP, SSE parsing, error mapping, retries, timeouts — is exercised::

    async with ScriptedLLMServer([Fault.rate_limited(retry_after=1), Reply(text="hi")]) as srv:
        provider = OpenAICompatibleProvider(
            name="openai", model="gpt-x", base_url=srv.openai_base_url, api_key="k"
        )
        ...
        assert srv.requests[0].json["model"] == "gpt-x"

One server answers both ``POST /v1/chat/completions`` (OpenAI format) and ``POST /v1/messages``
(Anthropic format). Answers come from a queue of ``Reply``/``Fault`` items (``enqueue``), and,
once the queue is empty, from an optional ``responder`` function of the request. With neither,
the server answers 418 "script exhausted", which clients treat as a non-retryable error.

Media: ``images(i)`` lists the images request ``i`` carried (OpenAI ``image_url`` parts,
Anthropic ``image`` blocks: decoded bytes, type, size; ``_llm_images``), and
``strict_images=True`` refuses with the provider's 400 an image it would refuse.
``POST /v1/audio/transcriptions`` (``_llm_audio``) answers the ``transcript`` given, or the
ones queued with ``enqueue_transcripts``, and records each upload in ``transcriptions``.

Three ways to run it:

- ``async with ScriptedLLMServer(...)`` in the test's event loop;
- ``with ScriptedLLMServer(...)`` runs it on its own loop in a daemon thread (sync tests);
- ``python -m duragent.testing.fake_llm_server --port 0 --script s.json`` in another process
  (crash tests). It prints ``listening on http://127.0.0.1:PORT``; ``POST /_fake/script``
  appends items, ``GET /_fake/requests`` lists what was received and ``GET /_fake/served``
  says how many answers it finished and the seconds they took (``served``);
  ``POST /_fake/transcripts`` queues transcripts (a list) or sets the default
  (``{"default": …}``), ``GET /_fake/transcriptions`` lists the uploads.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from duragent.testing._app import LLMEndpoint
from duragent.testing._lifecycle import ServerLifecycle
from duragent.testing._llm_audio import AudioUpload, TranscriptItem, TranscriptScript
from duragent.testing._llm_images import RequestImage, image_refusal, request_images
from duragent.testing._sockets import listen
from duragent.testing.script import (
    Fault,
    RecordedRequest,
    Responder,
    ScriptItem,
    Wire,
    item_from_json,
)

__all__ = ["EXHAUSTED_STATUS", "ScriptedLLMServer"]

log = logging.getLogger(__name__)

EXHAUSTED_STATUS = 418
"""Status answered when the script has nothing left: unusual, so it stands out in a failure."""


class _EmbeddedUvicorn(uvicorn.Server):
    """uvicorn without signal handlers, polling, or the fixed grace sleeps of its shutdown.

    The stock server installs SIGINT/SIGTERM handlers (wrong inside a test process), checks
    for exit every 0.1 s and sleeps 0.1 s while shutting down; with a fresh server per test
    those pauses dominate the suite's run time.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stop_requested = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def main_loop(self) -> None:
        await self.on_tick(0)  # sets the default (date) headers once
        if not self.should_exit:
            await self.stop_requested.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        if self.server_state.tasks:  # handlers end promptly: their waits watch `closing`
            await asyncio.wait(set(self.server_state.tasks), timeout=2.0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 1.0
        # uvicorn has no "all connections closed" event; closing takes a loop turn or two.
        while self.server_state.connections and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.001)
        for task in list(self.server_state.tasks):
            task.cancel()
        for server in self.servers:
            await server.wait_closed()


class ScriptedLLMServer(ServerLifecycle):
    """An in-process HTTP server answering LLM API calls from a script (see module docstring).

    Args:
        script: replies and faults answered in order, one per request.
        responder: computes the answer from the request once the queue is empty.
        on_request: called with every request as it arrives (e.g. to log it to a file).
        host: interface to bind; loopback by default.
        port: TCP port; 0 picks a free one (read ``port`` after starting).
        keep_requests: how many of the latest requests ``requests`` keeps (None: all). A
            benchmark of a long chat sets it low: every request carries the whole history,
            and thousands of parsed bodies kept alive make this server's garbage collector,
            not the client, the cost that grows with the chat.
        transcript: what ``/v1/audio/transcriptions`` answers once its queue is empty
            (``None``: 418 "script exhausted").
        hears: decides each upload's transcript from the upload (its bytes) once the queue
            is empty, instead of ``transcript``: concurrent voice notes each get their own.
        strict_images: answer 400, as the provider would, a request with an image it would
            refuse (``RequestImage.problem``), without using a scripted answer.
    """

    name = "fake LLM server"

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        responder: Responder | None = None,
        on_request: Callable[[RecordedRequest], None] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_requests: int | None = None,
        transcript: str | None = None,
        hears: Callable[[AudioUpload], TranscriptItem] | None = None,
        strict_images: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.responder = responder
        self.on_request = on_request
        self._queue: deque[ScriptItem] = deque(script)
        self._requests: deque[RecordedRequest] = deque(maxlen=keep_requests)
        self._received = 0
        self._served = 0  # answers finished, and the seconds they took (``served``)
        self._serving_seconds = 0.0
        self._lock = threading.Lock()
        self._closing: asyncio.Event | None = None
        self._server: _EmbeddedUvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._transcripts = TranscriptScript(transcript, hears=hears)
        self.strict_images = strict_images

    # -- the script -----------------------------------------------------------------------

    def enqueue(self, *items: ScriptItem) -> None:
        """Append answers to the script (thread-safe; may be called while serving)."""
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """How many scripted answers have not been used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (the latest ``keep_requests``), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request; ``LookupError`` when none arrived."""
        with self._lock:
            if not self._requests:
                raise LookupError("the fake LLM server has received no request")
            return self._requests[-1]

    @property
    def served(self) -> tuple[int, float]:
        """(requests answered, seconds spent answering them) since the server started.

        The model's own time: from a request's headers to the last byte of its answer,
        reading the body included. A benchmark reads it before and after a turn to separate
        what the model server spent (parsing a long history grows with the chat) from what
        the client spent.
        """
        with self._lock:
            return self._served, self._serving_seconds

    def images(self, index: int = -1) -> list[RequestImage]:
        """The images request ``index`` of ``requests`` carried (default: the latest)."""
        return request_images(self.requests[index])

    @property
    def transcript(self) -> str | None:
        """The transcript answered once the queued ones are used (``None``: 418)."""
        return self._transcripts.default

    @transcript.setter
    def transcript(self, text: str | None) -> None:
        self._transcripts.default = text

    def enqueue_transcripts(self, *items: TranscriptItem) -> None:
        """Answer the next transcription requests with these transcripts (or ``Fault`` s)."""
        self._transcripts.enqueue(items)

    @property
    def transcriptions(self) -> list[AudioUpload]:
        """Every audio upload answered, in order (bytes, file name, model, fields)."""
        return self._transcripts.uploads

    def _count_served(self, seconds: float) -> None:
        with self._lock:
            self._served += 1
            self._serving_seconds += seconds

    async def _record_and_choose(
        self, scope: Scope, raw: bytes, wire: Wire
    ) -> tuple[RecordedRequest, ScriptItem]:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        with self._lock:
            recorded = RecordedRequest(
                index=self._received,
                method=scope["method"],
                path=scope["path"],
                headers=headers,
                body=body,
                raw=raw,
                wire=wire,
            )
            self._requests.append(recorded)
            self._received += 1
            item: ScriptItem | None = image_refusal(recorded) if self.strict_images else None
            if item is None and self._queue:  # a refused image uses no scripted answer
                item = self._queue.popleft()
        if self.on_request is not None:
            self.on_request(recorded)
        if item is None and self.responder is not None:
            try:
                answer = self.responder(recorded)
                item = await answer if inspect.isawaitable(answer) else answer
            except Exception as exc:  # a broken test responder must show up in the test
                log.exception("fake LLM server: the responder failed")
                item = Fault(status=500, message=f"fake LLM server: responder failed: {exc!r}")
        if item is None:
            item = Fault(
                status=EXHAUSTED_STATUS,
                message=f"fake LLM server: script exhausted at request #{recorded.index} "
                f"({recorded.method} {recorded.path})",
            )
        return recorded, item

    # -- HTTP app -------------------------------------------------------------------------

    def _closing_event(self) -> asyncio.Event:
        if self._closing is None:
            self._closing = asyncio.Event()
        return self._closing

    async def _admin_script(self, request: Request) -> Response:
        items = await request.json()
        if not isinstance(items, list):
            return JSONResponse({"error": "expected a JSON list of script items"}, 400)
        try:
            parsed = [item_from_json(i) for i in items]
        except (TypeError, ValueError) as exc:
            return JSONResponse({"error": str(exc)}, 400)
        self.enqueue(*parsed)
        return JSONResponse({"pending": self.pending})

    async def _admin_requests(self, request: Request) -> Response:
        return JSONResponse([r.to_json() for r in self.requests])

    async def _admin_served(self, request: Request) -> Response:
        count, seconds = self.served
        return JSONResponse({"requests": count, "seconds": seconds})

    def app(self) -> Starlette:
        """The ASGI application (usable on its own, e.g. with httpx's ASGI transport)."""
        chat = LLMEndpoint(
            "openai", self._record_and_choose, self._closing_event, self._count_served
        )
        messages = LLMEndpoint(
            "anthropic", self._record_and_choose, self._closing_event, self._count_served
        )
        return Starlette(
            routes=[
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/messages", messages, methods=["POST"]),
                *self._transcripts.routes(),
                Route("/_fake/script", self._admin_script, methods=["POST"]),
                Route("/_fake/requests", self._admin_requests, methods=["GET"]),
                Route("/_fake/served", self._admin_served, methods=["GET"]),
            ]
        )

    # -- addresses ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://host:port`` — the Anthropic SDK's ``base_url`` (it adds ``/v1/messages``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``http://host:port/v1`` — the OpenAI SDK's ``base_url``."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Same as ``base_url``; named for readability at call sites."""
        return self.base_url

    # -- lifecycle in the current event loop ------------------------------------------------

    async def start(self) -> None:
        """Bind the socket and serve in a task of the running loop; returns once accepting."""
        if self._task is not None:
            raise RuntimeError("the fake LLM server is already running")
        sock = listen(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._closing = asyncio.Event()
        config = uvicorn.Config(
            self.app(),
            lifespan="off",
            log_config=None,
            access_log=False,
            http="h11",
            ws="none",
        )
        self._server = _EmbeddedUvicorn(config)
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="fake-llm")
        while not self._server.started:
            if self._task.done():
                sock.close()
                self._task.result()  # re-raise why it could not start
                raise RuntimeError("the fake LLM server stopped while starting")
            await asyncio.sleep(0.001)

    def request_stop(self) -> None:
        """Ask the server to stop (call on its own loop, e.g. from a signal handler)."""
        if self._closing is not None:
            self._closing.set()
        if self._server is not None:
            self._server.should_exit = True
            self._server.stop_requested.set()

    async def stop(self) -> None:
        """Cut pending answers, close every connection and the socket."""
        if self._task is None:
            return
        self.request_stop()
        try:
            await self._task
        finally:
            self._task = None
            self._server = None

    async def serve_until_stopped(self) -> None:
        """Serve until ``request_stop``/``stop_thread`` ends it, starting first if needed."""
        if self._task is None:
            await self.start()
        assert self._task is not None
        await self._task
        await self.stop()


if __name__ == "__main__":
    from duragent.testing._cli import main

    sys.exit(main())
