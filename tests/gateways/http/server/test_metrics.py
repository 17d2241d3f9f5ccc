"""``/metrics``: after a scripted workload the counters equal what happened, and who may read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from duragent.core.events import EventType
from duragent.gateways.http.app import build_app
from duragent.testing import Fault, Reply, ToolCallReply
from tests.gateways.http.api_fixtures import Served, served

BASH = "  tools:\n    - type: builtin\n      name: bash\n"
TRUSTED = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: dangerous\n"
# Under spec.session (write_workspace appends ``tools`` after it): no summaries, so long
# messages are trimmed and big results truncated, as the budget report says.
SUMMARIES_OFF = "    context:\n      summaries:\n        enabled: false\n"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and labels (parsed by prometheus_client)."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str):
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def _send(s: Served, sid: str, content: str) -> dict[str, Any]:
    r = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": content})
    assert r.status_code == 200, r.text
    return r.json()


async def test_the_counters_equal_what_the_turns_did(tmp_path: Path) -> None:
    async with served(tmp_path, tools=SUMMARIES_OFF + BASH, policy=TRUSTED) as s:
        agent = tmp_path / ".duragent" / "agents" / "bot" / "agent.yaml"  # a 3,000-token window
        text = agent.read_text().replace("max_input_tokens: 16000", "max_input_tokens: 3000")
        agent.write_text(text)
        assert (await s.client.post("/api/admin/v1/reload-agents")).status_code == 200
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        big = [  # four big results in one response: together more than the window holds
            ToolCallReply(name="bash", arguments={"command": f"seq {i} 3000"}, id=f"c{i}")
            for i in range(1, 5)
        ]
        s.server.enqueue(
            Reply(tool_calls=big, prompt_tokens=100, completion_tokens=5),
            Reply(text="counted", prompt_tokens=900, completion_tokens=3),
        )
        await _send(s, sid, "count to three thousand")
        for i in range(4):  # each ~600 tokens: the window soon holds only the latest
            s.server.enqueue(Reply(text=f"ok {i}", prompt_tokens=50 + i, completion_tokens=2))
            await _send(s, sid, f"message {i}: " + "lorem ipsum dolor " * 200)

        r = await s.client.get("/metrics")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        found = samples(r.text)
        events, _ = s.runtime.registry.store.event_log(sid).read()

    assistant = [
        e.data
        for e in events
        if e.type in (EventType.ASSISTANT_MESSAGE, EventType.ASSISTANT_RESPONSE)
    ]
    budgets = [a["budget"] for a in assistant]
    labels = {"agent": "bot", "model": "gpt-4o"}
    assert value(found, "duragent_turn_duration_seconds_count", front_end="http", agent="bot") == 5
    assert value(found, "duragent_model_call_duration_seconds_count", **labels) == 6
    assert value(found, "duragent_model_time_to_first_token_seconds_count", **labels) == 5
    tokens_in = value(found, "duragent_model_tokens_total", direction="input", **labels)
    tokens_out = value(found, "duragent_model_tokens_total", direction="output", **labels)
    assert (tokens_in, tokens_out) == (100 + 900 + 50 + 51 + 52 + 53, 5 + 3 + 4 * 2)
    for field, action in (("history_omitted", "trimmed"), ("results_shrunk", "truncated")):
        requests = sum(1 for b in budgets if b.get(field))
        items = sum(b.get(field, 0) for b in budgets)
        assert requests > 0, f"the workload never {action} anything: it tests nothing"
        assert (
            value(found, "duragent_context_requests_total", agent="bot", action=action) == requests
        )
        assert value(found, "duragent_context_items_total", agent="bot", action=action) == items
    appends = value(found, "duragent_event_log_fsync_duration_seconds_count")
    assert 5 <= appends <= len(events)  # at least one durable append a turn; some hold several
    assert value(found, "duragent_live_actors") == 1
    assert ("duragent_provider_errors_total", ()) not in found


async def test_provider_errors_are_counted_by_kind(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(*[Fault(status=401, message="bad key")] * 3)
        r = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        assert r.status_code >= 400
        found = samples((await s.client.get("/metrics")).text)
    kind = {"agent": "bot", "model": "gpt-4o", "kind": "auth"}
    assert value(found, "duragent_provider_errors_total", **kind) == 1


async def test_a_model_call_the_provider_tried_again_counts_a_retry_not_an_error(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Fault.rate_limited(retry_after=0), Reply(text="there you go"))
        assert (await _send(s, sid, "hi"))["content"] == "there you go"
        found = samples((await s.client.get("/metrics")).text)
    retry = {"model": "gpt-4o", "kind": "rate_limit"}
    assert value(found, "duragent_model_retries_total", **retry) == 1
    assert not any(name == "duragent_provider_errors_total" for name, _ in found)


async def test_metrics_refuse_a_remote_client_without_the_token(tmp_path: Path) -> None:
    tokens = "  api_token: api-secret\n"
    async with served(tmp_path, server_yaml=tokens) as s:
        app = build_app(s.runtime)
        remote = httpx.ASGITransport(app=app, client=("10.1.2.3", 5555))
        async with httpx.AsyncClient(transport=remote, base_url="http://duragent.test") as c:
            assert (await c.get("/metrics")).status_code == 401
            bad = await c.get("/metrics", headers={"authorization": "Bearer nope"})
            assert bad.status_code == 401
            assert "api-secret" not in bad.text
            ok = await c.get("/metrics", headers={"authorization": "Bearer api-secret"})
            assert ok.status_code == 200
            assert (await c.get("/metrics?token=api-secret")).status_code == 401  # never in URLs


async def test_with_an_admin_token_only_it_reads_the_metrics(tmp_path: Path) -> None:
    tokens = "  api_token: api-secret\n  admin_token: admin-secret\n"
    async with served(tmp_path, server_yaml=tokens) as s:
        api = await s.client.get("/metrics", headers={"authorization": "Bearer api-secret"})
        assert api.status_code == 403
        ok = await s.client.get("/metrics", headers={"authorization": "Bearer admin-secret"})
        assert ok.status_code == 200


async def test_without_tokens_a_remote_client_is_refused_and_loopback_served(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        assert (await s.client.get("/metrics")).status_code == 200
        remote = httpx.ASGITransport(app=build_app(s.runtime), client=("10.1.2.3", 5555))
        async with httpx.AsyncClient(transport=remote, base_url="http://127.0.0.1") as c:
            r = await c.get("/metrics")
            assert r.status_code == 401, r.text


async def test_metrics_off_records_nothing_and_the_route_says_so(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml="  metrics: false\n") as s:
        assert s.runtime.metrics is None
        r = await s.client.get("/metrics")
        assert r.status_code == 404
        assert "server.metrics" in r.json()["detail"]
