"""Fuzz the HTTP API against its own OpenAPI document with schemathesis.

A real Runtime serves a workspace on 127.0.0.1 (uvicorn, port 0) from a thread of its own; its
one agent, ``bot``, runs on the offline model, so every turn succeeds at once and a 502 (the
documented answer when the model fails) never happens. For every operation of the document
(the one ``/openapi.json`` serves, checked below), schemathesis sends generated requests, valid
and invalid, and checks each answer with its default checks: never a 5xx, a documented status
code, the documented content type, a body matching the documented schema (each SSE event
included), invalid input rejected, valid input not rejected, a 405 with ``Allow`` for methods
the path lacks, and so on.

Path parameters name real sessions most of the time: sessions are created up front and bound
to ``session_id`` through schemathesis dictionaries (fuzzing phase) and examples (examples and
coverage phases). DELETE and approve get sessions of their own, so deleting one or resolving
its approval does not starve the other operations. ``POST /api/admin/v1/shutdown`` is not
fuzzed: it would stop the server (test_api covers it).

The test cases of the fuzzing all show the same pytest node id (schemathesis 4.32 names them
``…[METHOD /path]``, a name pytest 9.2 no longer puts in the id); a failure's report names the
operation and gives a curl line that reproduces it.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis

from duragent import __version__
from duragent.config import load_workspace
from duragent.gateways.http.openapi.document import openapi_document
from duragent.runtime import Runtime

pytestmark = pytest.mark.timeout(240)

AGENT_YAML = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
  description: fuzz target
spec:
  model:
    provider: offline
    name: duragent-offline
  tools:
    - type: builtin
      name: bash
"""
# Every bash call waits for approval, so sessions can be left with a pending one.
POLICY_YAML = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
APPROVAL_REQUEST = '!call bash {"command": "echo fuzz"}'

PROBLEM = "application/problem+json"
SEED = 20240607
MAX_EXAMPLES = 40


# schemathesis builds its tests when this module is collected, before any session exists, so
# its dictionaries hold placeholders and each case swaps them for the real ids just before it
# is sent (a lazy schema from a fixture would avoid that, but schemathesis' ``from_fixture``
# does not run under pytest 9.2).
SHARED, DOOMED, PENDING = 3, 3, 3


def _placeholders(kind: str, count: int) -> list[str]:
    return [f"{kind}-{i}" for i in range(count)]


@dataclass
class LiveServer:
    """The running server and the real ids behind the placeholders."""

    base_url: str
    ids: dict[str, str] = field(default_factory=dict)

    def resolve(self, case: schemathesis.Case[Any]) -> None:
        """Replace placeholder ids in ``case`` by real ones (other values are left alone)."""
        session_id = case.path_parameters.get("session_id") if case.path_parameters else None
        if isinstance(session_id, str) and session_id in self.ids:
            case.path_parameters["session_id"] = self.ids[session_id]
        body = case.body
        call_id = body.get("call_id") if isinstance(body, dict) else None
        if isinstance(body, dict) and isinstance(call_id, str) and call_id in self.ids:
            body["call_id"] = self.ids[call_id]


def _write_workspace(root: Path) -> None:
    (root / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n")
    agent = root / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True)
    (agent / "agent.yaml").write_text(AGENT_YAML)
    (agent / "policy.yaml").write_text(POLICY_YAML)


class _ServerThread(threading.Thread):
    """Runs the Runtime in an event loop of its own until ``stop``."""

    def __init__(self, root: Path) -> None:
        super().__init__(name="fuzz-server", daemon=True)
        self.root = root
        self.ready: queue.Queue[int | BaseException] = queue.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self.ready.put(exc)

    async def _main(self) -> None:
        runtime = Runtime(load_workspace(self.root), port=0)
        await runtime.start()
        try:
            self._loop = asyncio.get_running_loop()
            self._stop_event = asyncio.Event()
            assert runtime.http_port is not None
            self.ready.put(runtime.http_port)
            await self._stop_event.wait()
        finally:
            await runtime.aclose()

    def port(self) -> int:
        outcome = self.ready.get(timeout=60)
        if isinstance(outcome, BaseException):
            raise RuntimeError("the fuzz server did not start") from outcome
        return outcome

    def stop(self) -> None:
        if self._loop is not None and self._stop_event is not None:
            self._loop.call_soon_threadsafe(self._stop_event.set)
        self.join(timeout=30)


def _seed(client: httpx.Client, server: LiveServer) -> None:
    def create(placeholder: str) -> str:
        response = client.post("/api/v1/sessions", json={"agent": "bot"})
        assert response.status_code == 201, response.text
        session_id: str = response.json()["session_id"]
        server.ids[placeholder] = session_id
        return session_id

    def say(session_id: str, content: str, status: int = 200) -> dict[str, Any]:
        reply = client.post(f"/api/v1/sessions/{session_id}/messages", json={"content": content})
        assert reply.status_code == status, reply.text
        body: dict[str, Any] = reply.json()
        return body

    _fresh, talked, tooled = (create(p) for p in _placeholders("session", SHARED))
    say(talked, "hi")
    say(tooled, "!call nope {}")  # a tool the agent lacks: a call and a failed result
    for placeholder in _placeholders("doomed", DOOMED):
        create(placeholder)
    for placeholder, call in zip(
        _placeholders("pending", PENDING), _placeholders("call", PENDING), strict=True
    ):
        server.ids[call] = say(create(placeholder), APPROVAL_REQUEST, 202)["call_id"]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("fuzz-workspace")
    _write_workspace(root)
    thread = _ServerThread(root)
    thread.start()
    try:
        server = LiveServer(base_url=f"http://127.0.0.1:{thread.port()}")
        with httpx.Client(base_url=server.base_url, timeout=120) as client:
            _seed(client, server)
        yield server
    finally:
        thread.stop()


def _bound(dictionary: str, probability: float) -> dict[str, Any]:
    return {"dictionary": dictionary, "probability": probability}


CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        "request-timeout": 20,
        # Seeded and without a database: the same cases on every run. No shrinking: a failure
        # is reported as found (with its curl line), not minimised over many more requests.
        "generation": {"max-examples": MAX_EXAMPLES, "database": "none", "no-shrink": True},
        # The only timing-dependent health check; a slow CI machine must not fail the test.
        "suppress-health-check": ["too_slow"],
        # Stateful testing needs links between operations; the per-operation phases suffice.
        "phases": {"stateful": {"enabled": False}},
        "dictionaries": {
            "sessions": {"values": _placeholders("session", SHARED)},
            "doomed": {"values": _placeholders("doomed", DOOMED)},
            "pending": {"values": _placeholders("pending", PENDING)},
            "calls": {"values": _placeholders("call", PENDING)},
            "agents": {"values": ["bot"]},
        },
        "parameters": {
            "path.session_id": _bound("sessions", 0.8),
            "path.name": _bound("agents", 0.5),
            "body.agent": _bound("agents", 0.5),
            "body.model": _bound("agents", 0.8),
            "path.model": _bound("agents", 0.5),
        },
        "operations": [
            {
                "include-method": "DELETE",
                "parameters": {"path.session_id": _bound("doomed", 0.5)},
            },
            {
                # A schema-valid cron expression or time zone may still not exist: the
                # scheduler names the field in a 400 (JSON Schema cannot tell them apart).
                "include-path": "/api/v1/schedules",
                "include-method": "POST",
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "5xx"]
                    }
                },
            },
            {
                # JSON Schema cannot say "the LAST message has role user" (a 400 naming it),
                # and a schema-valid model may name no agent (404).
                "include-path": "/v1/chat/completions",
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "5xx"]
                    }
                },
            },
            {
                "include-path": "/api/v1/sessions/{session_id}/approve",
                "parameters": {
                    "path.session_id": _bound("pending", 0.8),
                    "body.call_id": _bound("calls", 0.8),
                },
            },
        ],
    }
)


def _fuzzed_document() -> dict[str, Any]:
    """The served document, plus examples naming seeded resources.

    Examples are where schemathesis' examples and coverage phases take their valid values
    from (dictionaries only feed the fuzzing phase); without them every one of those cases
    would name a session that does not exist and stop at the 404.
    """
    document = openapi_document(__version__)
    examples = {"session_id": "session-1", "name": "bot", "model": "bot"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            ids = dict(examples)
            if method == "delete":
                ids["session_id"] = "doomed-0"
            if path.endswith("/approve"):
                ids["session_id"] = "pending-0"
            operation["parameters"] = [
                {**p, "example": ids[p["name"]]} if p["name"] in ids else p
                for p in operation.get("parameters", [])
            ]
    return document


schema = schemathesis.openapi.from_dict(_fuzzed_document(), config=CONFIG).exclude(
    path="/api/admin/v1/shutdown"
)


def test_the_fuzzed_document_is_the_served_one(live_server: LiveServer) -> None:
    served = httpx.get(f"{live_server.base_url}/openapi.json", timeout=120)
    assert served.json() == openapi_document(__version__)


DEEP = b"[" * 100_000 + b"]" * 100_000
LONG_ID = "s" * 5000


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        # json.loads raised RecursionError: a 500.
        pytest.param("POST", "/api/v1/sessions", DEEP, 400, id="deep-json"),
        pytest.param(
            "POST",
            "/api/v1/sessions/{sid}/messages",
            b'{"content": ' + DEEP + b"}",
            400,
            id="deep-json-content",
        ),
        # A lone surrogate echoed in the 404's detail could not be encoded: a 500.
        pytest.param("POST", "/api/v1/sessions", b'{"agent": "\\ud800"}', 404, id="surrogate"),
        # A session id longer than a file name made the store's stat() fail: a 500.
        pytest.param("GET", f"/api/v1/sessions/{LONG_ID}", b"", 404, id="long-id-get"),
        pytest.param("DELETE", f"/api/v1/sessions/{LONG_ID}", b"", 404, id="long-id-delete"),
        pytest.param(
            "POST",
            f"/api/v1/sessions/{LONG_ID}/stream",
            b'{"content": "x"}',
            404,
            id="long-id-stream",
        ),
        # Accepted although the document says boolean / integer.
        pytest.param(
            "GET",
            "/api/v1/sessions/{sid}/messages?include_tools=null",
            b"",
            400,
            id="include-tools-null",
        ),
        pytest.param("GET", "/api/v1/sessions?limit=%D9%A3", b"", 400, id="limit-arabic-digit"),
        pytest.param("GET", "/api/v1/sessions?limit=1_0", b"", 400, id="limit-underscore"),
        # int() refuses 5000 digits (ValueError): clamped (paging.py), never a 500.
        pytest.param(
            "GET", "/api/v1/sessions?limit=" + "9" * 5000, b"", 200, id="limit-5000-digits"
        ),
        pytest.param(
            "GET", "/api/v1/sessions?limit=-" + "9" * 5000, b"", 400, id="limit-minus-5000-digits"
        ),
        pytest.param("GET", "/api/v1/sessions?limit=0010", b"", 200, id="limit-leading-zeros"),
    ],
)
def test_inputs_that_once_broke_the_contract(
    live_server: LiveServer, method: str, path: str, body: bytes, status: int
) -> None:
    sid = live_server.ids["session-0"]
    response = httpx.request(
        method,
        live_server.base_url + path.format(sid=sid),
        content=body,
        headers={"content-type": "application/json"},
        timeout=120,
    )
    assert response.status_code == status, response.text
    if status >= 400:
        assert response.headers["content-type"] == PROBLEM
        assert response.json()["status"] == status


def test_a_405_is_a_problem_listing_every_method_of_the_path(live_server: LiveServer) -> None:
    sid = live_server.ids["session-0"]
    response = httpx.put(f"{live_server.base_url}/api/v1/sessions/{sid}/messages", timeout=120)
    assert response.status_code == 405
    assert response.headers["content-type"] == PROBLEM
    assert response.headers["allow"] == "GET, HEAD, POST"


def test_approve_checks_the_whole_body_and_names_a_stale_call_id(
    live_server: LiveServer,
) -> None:
    with httpx.Client(base_url=live_server.base_url, timeout=120) as client:
        sid = client.post("/api/v1/sessions", json={"agent": "bot"}).json()["session_id"]
        asked = client.post(f"/api/v1/sessions/{sid}/messages", json={"content": APPROVAL_REQUEST})
        call_id = asked.json()["call_id"]
        url = f"/api/v1/sessions/{sid}/approve"
        bad_command = client.post(url, json={"call_id": call_id, "decision": "deny", "command": 5})
        assert bad_command.status_code == 400
        stale = client.post(url, json={"call_id": "call_other", "decision": "deny"})
        assert stale.status_code == 409
        assert stale.headers["content-type"] == PROBLEM
        denied = client.post(url, json={"call_id": call_id, "decision": "deny"})
        assert denied.status_code == 200, denied.text
        again = client.post(url, json={"call_id": call_id, "decision": "deny"})
        assert again.status_code == 404


@schema.parametrize()
def test_every_operation_answers_as_its_openapi_document_says(
    case: schemathesis.Case[Any], live_server: LiveServer
) -> None:
    live_server.resolve(case)
    case.call_and_validate(base_url=live_server.base_url)
