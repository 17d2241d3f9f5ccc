"""A turn cut by a lease take-over: every client of its message is told what really happened.

Two real ``Runtime`` nodes on one PostgreSQL schema, one scripted model. Node ``n1`` runs a
turn whose bash call waits for a file; while it waits, ``n1`` "stalls past its lease" (the
lease is expired in the database, as a SIGSTOP longer than the lease leaves it) and ``n2``
takes the session over. When the call ends, ``n1``'s write is refused by the fence and its
request is served again where the session lives, under the same message key. Whatever the
new owner recorded for that message is the answer: never ``{"status": "duplicate"}`` for a
message whose turn was cut.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import Reply, ScriptedLLMServer
from duragent.testing.script import RecordedRequest, ToolCallReply
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")

RUN = "run: "


def respond(request: RecordedRequest) -> Reply:
    """``run: <command>`` → a bash call; after a tool result → a reply quoting it; else echo."""
    messages = request.json.get("messages", [])
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return Reply(text=f"after the tool: {str(last.get('content'))[:60]}")
    content = str(last.get("content") or "")
    if content.startswith(RUN):
        call = ToolCallReply(
            name="bash", arguments={"command": content[len(RUN) :]}, id=f"c{request.index}"
        )
        return Reply(tool_calls=[call])
    return Reply(text=f"re: {content}")


def write_node(root: Path, schema: str, node: str, llm: str) -> Path:
    agent = root / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True)
    (agent / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: bot\nspec:\n"
        f"  model:\n    provider: fake\n    name: gpt-4o\n    base_url: {llm}\n"
        "    max_input_tokens: 16000\n    max_output_tokens: 500\n"
        "  tools:\n    - type: builtin\n      name: bash\n"
    )
    # A long lease: no renewal of n1's lands between the test expiring it and n2's claim.
    (root / "duragent.yaml").write_text(
        "server:\n  host: 127.0.0.1\n"
        f"store:\n  backend: postgres\n  dsn: '{postgres_db.DSN}'\n  schema: {schema}\n"
        f"  node_id: {node}\n  lease_seconds: 60\n"
    )
    return root


@dataclass
class Cluster:
    n1: Runtime
    n2: Runtime
    schema: str
    client: httpx.AsyncClient
    files: Path

    def url(self, node: Runtime, path: str = "") -> str:
        return f"http://127.0.0.1:{node.http_port}{path}"

    def expire_leases(self) -> None:
        """What a node stalled past its lease looks like to the database."""
        with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as conn:
            conn.execute(f"SET search_path = {self.schema}")
            conn.execute("UPDATE sessions SET lease_expires_at = now() - interval '1 second'")

    def waiting_command(self) -> str:
        """A bash call that says it started, then waits until the test lets it finish."""
        started, go = self.files / "started", self.files / "go"
        return f"{RUN}touch {started}; while [ ! -f {go} ]; do sleep 0.05; done; echo finished"

    async def cut_on_n1(self, start: Any) -> Any:
        """Start a request on n1 (``start()``), let n2 take the session while its call runs."""
        sending = asyncio.ensure_future(start())
        assert await eventually(lambda: (self.files / "started").exists(), within=60)
        self.expire_leases()
        return sending

    def release(self) -> None:
        (self.files / "go").touch()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with ScriptedLLMServer(responder=respond) as llm:
        with postgres_db.fresh_schema() as schema:
            nodes: list[Runtime] = []
            try:
                for name in ("n1", "n2"):
                    root = write_node(tmp_path / name, schema, name, llm.openai_base_url)
                    nodes.append(Runtime(load_workspace(root), port=0))
                    await nodes[-1].start()
                async with httpx.AsyncClient(timeout=120) as client:
                    yield Cluster(nodes[0], nodes[1], schema, client, tmp_path)
            finally:
                for node in nodes:
                    await node.aclose()


async def new_session(c: Cluster) -> str:
    made = await c.client.post(c.url(c.n1, "/api/v1/sessions"), json={"agent": "bot"})
    return str(made.json()["session_id"])


def history(c: Cluster, sid: str) -> Any:
    return c.client.get(c.url(c.n2, f"/api/v1/sessions/{sid}/messages?include_tools=true"))


async def test_a_turn_cut_by_a_take_over_and_left_unanswered_is_answered_as_interrupted(
    cluster: Cluster,
) -> None:
    c = cluster
    sid = await new_session(c)
    path = f"/api/v1/sessions/{sid}/messages"
    key = {"Idempotency-Key": "cut-1"}
    body = {"content": c.waiting_command()}
    sending = await c.cut_on_n1(lambda: c.client.post(c.url(c.n1, path), json=body, headers=key))
    # n2 takes the session over for another message: the cut call is closed, the talk goes on
    later = await c.client.post(c.url(c.n2, path), json={"content": "hello"})
    c.release()
    cut = await sending
    again = await c.client.post(c.url(c.n2, path), json=body, headers=key)  # a retry
    recorded = (await history(c, sid)).json()["messages"]
    assert later.status_code == 200, later.text
    assert later.json()["content"] == "re: hello"
    for answer in (cut, again):  # the cut request itself, and the same message sent again
        assert answer.status_code == 409, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        problem = answer.json()
        assert problem["code"] == "turn_interrupted"
        assert problem["message_recorded"] is True
        assert "interrupted" in problem["detail"]
        assert "bash" in problem["detail"]
        assert [(t["name"], t["outcome"]) for t in problem["tool_calls"]] == [
            ("bash", "interrupted")
        ]
        assert problem["message_seq"] >= 1
    users = [m["content"] for m in recorded if m["role"] == "user"]
    assert users == [body["content"], "hello"]  # recorded once, never run twice


async def test_a_cut_turn_finished_by_the_new_owner_answers_its_reply_and_the_interruption(
    cluster: Cluster,
) -> None:
    c = cluster
    sid = await new_session(c)
    path = f"/api/v1/sessions/{sid}/messages"
    key = {"Idempotency-Key": "cut-2"}
    body = {"content": c.waiting_command()}
    sending = await c.cut_on_n1(lambda: c.client.post(c.url(c.n1, path), json=body, headers=key))
    # the client gave up on n1 and sent the same message to n2: its turn goes on there
    retried = await c.client.post(c.url(c.n2, path), json=body, headers=key)
    c.release()
    cut = await sending
    recorded = (await history(c, sid)).json()["messages"]
    assert retried.status_code == 200, retried.text
    assert retried.json()["content"].startswith("after the tool: Error: tool execution interrupted")
    assert cut.status_code == 200, cut.text
    answer = cut.json()
    assert "status" not in answer  # not "duplicate": this is what its turn answered
    assert answer["role"] == "assistant"
    assert answer["content"] == retried.json()["content"]
    assert answer["message_id"] == retried.json()["message_id"]
    assert [(t["name"], t["outcome"]) for t in answer["interruption"]["tool_calls"]] == [
        ("bash", "interrupted")
    ]
    for reply in (retried.json(), answer):
        assert reply["interruption"]["message_seq"] >= 1
    finals = [m for m in recorded if m["role"] == "assistant" and not m.get("tool_calls")]
    assert len(finals) == 1  # answered once


async def test_a_message_answered_normally_is_still_a_duplicate(cluster: Cluster) -> None:
    c = cluster
    sid = await new_session(c)
    path = f"/api/v1/sessions/{sid}/messages"
    key = {"Idempotency-Key": "plain"}
    first = await c.client.post(c.url(c.n1, path), json={"content": "hi"}, headers=key)
    again = await c.client.post(c.url(c.n2, path), json={"content": "hi"}, headers=key)
    assert first.json()["content"] == "re: hi"
    assert "interruption" not in first.json()
    assert again.status_code == 200
    assert again.json() == {"status": "duplicate", "session_id": sid}


def sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of a Server-Sent Events body."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "event" in fields:
            out.append((fields["event"], json.loads(fields.get("data") or "{}")))
    return out


async def test_a_streamed_turn_cut_by_a_take_over_says_so_and_how_to_get_its_outcome(
    cluster: Cluster,
) -> None:
    c = cluster
    sid = await new_session(c)
    stream = f"/api/v1/sessions/{sid}/stream"
    key = {"Idempotency-Key": "cut-3"}
    body = {"content": c.waiting_command()}
    sending = await c.cut_on_n1(lambda: c.client.post(c.url(c.n1, stream), json=body, headers=key))
    later = await c.client.post(
        c.url(c.n2, f"/api/v1/sessions/{sid}/messages"), json={"content": "hello"}
    )
    c.release()
    cut = sse((await sending).text)
    again = sse((await c.client.post(c.url(c.n2, stream), json=body, headers=key)).text)
    assert later.status_code == 200, later.text
    names = [name for name, _ in cut]
    assert names[-2:] == ["error", "done"], cut
    error = cut[-2][1]
    assert error["code"] == "turn_interrupted"
    assert error["message_recorded"] is True
    assert error["idempotency_key"] == "cut-3"
    assert error["owner"] == "n2"
    assert "interrupted" in error["message"]
    assert "Idempotency-Key: cut-3" in error["message"]
    # as n1 saw it: bash ran there, though its result was never saved (see the retry below)
    assert [(t["name"], t["outcome"]) for t in error["tool_calls"]] == [("bash", "ran")]
    assert cut[-1][1]["status"] == "error"
    # sent again to the new owner: the recorded outcome, not "duplicate"
    assert [name for name, _ in again][-2:] == ["error", "done"], again
    assert again[-2][1]["code"] == "turn_interrupted"
    assert [(t["name"], t["outcome"]) for t in again[-2][1]["tool_calls"]] == [
        ("bash", "interrupted")
    ]


COMPLETIONS = "/v1/chat/completions"


def openai_chat(c: Cluster, sid: str) -> dict[str, Any]:
    """A chat completion continuing ``sid`` whose turn's bash call waits for the test."""
    return {
        "model": "bot",
        "session_id": sid,
        "messages": [{"role": "user", "content": c.waiting_command()}],
    }


async def test_the_openai_endpoint_answers_a_cut_turn_as_interrupted_never_duplicate(
    cluster: Cluster,
) -> None:
    c = cluster
    sid = await new_session(c)
    key = {"Idempotency-Key": "cut-4"}
    body = openai_chat(c, sid)
    sending = await c.cut_on_n1(
        lambda: c.client.post(c.url(c.n1, COMPLETIONS), json=body, headers=key)
    )
    later = await c.client.post(
        c.url(c.n2, f"/api/v1/sessions/{sid}/messages"), json={"content": "hello"}
    )
    c.release()
    cut = await sending
    again = await c.client.post(c.url(c.n2, COMPLETIONS), json=body, headers=key)
    assert later.status_code == 200, later.text
    for answer in (cut, again):
        assert answer.status_code == 409, answer.text
        error = answer.json()["error"]
        assert error["code"] == "turn_interrupted"
        assert "interrupted" in error["message"]
        assert answer.headers["x-should-retry"] == "false"


async def test_the_openai_endpoint_answers_a_cut_turn_that_went_on_with_its_reply(
    cluster: Cluster,
) -> None:
    c = cluster
    sid = await new_session(c)
    key = {"Idempotency-Key": "cut-5"}
    body = openai_chat(c, sid)
    sending = await c.cut_on_n1(
        lambda: c.client.post(c.url(c.n1, COMPLETIONS), json=body, headers=key)
    )
    retried = await c.client.post(c.url(c.n2, COMPLETIONS), json=body, headers=key)
    c.release()
    cut = await sending
    assert retried.status_code == 200, retried.text
    assert cut.status_code == 200, cut.text
    reply = retried.json()["choices"][0]["message"]["content"]
    assert reply.startswith("after the tool: Error: tool execution interrupted")
    answer = cut.json()
    assert answer["choices"][0]["message"]["content"] == reply
    assert answer["duragent"]["status"] == "complete"  # never "duplicate"
    assert [
        (t["name"], t["outcome"]) for t in answer["duragent"]["interruption"]["tool_calls"]
    ] == [("bash", "interrupted")]
