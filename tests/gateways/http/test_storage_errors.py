"""Storage failures and quarantine as a client sees them, over a real socket."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import httpx

from duragent.store import SessionStorage, SessionStore, StoreHealth
from duragent.testing import Reply, ToolCallReply
from tests.gateways.http.api_fixtures import served
from tests.store.failing_ops import FailingFileOps

PROBLEM = "application/problem+json"


def _inject(store: SessionStorage, ops: FailingFileOps | None = None) -> FailingFileOps:
    """Route the store's file calls through a fake disk (before any session is used)."""
    assert isinstance(store, SessionStore)  # the server keeps sessions in files
    ops = ops or FailingFileOps()
    store.ops = ops
    store.health = StoreHealth(store.root, ops)
    return ops


async def _user_texts(client: httpx.AsyncClient, sid: str) -> list[str]:
    response = await client.get(f"/api/v1/sessions/{sid}/messages")
    assert response.status_code == 200, response.text
    return [m["content"] for m in response.json()["messages"] if m["role"] == "user"]


async def _wait_ready(client: httpx.AsyncClient) -> httpx.Response:
    for _ in range(1_200):  # the probe runs at most once a second
        ready = await client.get("/readyz")
        if ready.status_code == 200:
            return ready
        await asyncio.sleep(0.1)
    return ready


async def test_a_full_disk_is_a_507_that_loses_nothing_and_readyz_follows_the_disk(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        ops = _inject(s.runtime.registry.store)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one"))
        first = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "first"})
        assert first.status_code == 200

        ops.failing = True
        full = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "second"})
        assert full.status_code == 507
        assert full.headers["content-type"] == PROBLEM
        body = full.json()
        assert body["errno"] == "ENOSPC"
        assert "No space left on device" in body["detail"]
        assert "events.jsonl" in body["detail"]
        assert "Nothing already saved was lost" in body["detail"]
        assert (await s.client.get("/readyz")).status_code == 503
        not_ready = (await s.client.get("/readyz")).json()
        assert "cannot write" in not_ready["detail"]
        assert "No space left" in not_ready["storage"]["error"]

        ops.failing = False  # space freed: readiness comes back without any session write
        assert (await _wait_ready(s.client)).json()["status"] == "ok"
        s.server.enqueue(Reply(text="two"))
        retry = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "second"})
        assert retry.status_code == 200, retry.text
        assert await _user_texts(s.client, sid) == ["first", "second"]


async def test_an_unreadable_snapshot_is_a_503_and_the_session_works_once_fixed(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        ops = _inject(s.runtime.registry.store)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one"))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "first"})
        await s.runtime.registry.stop(sid)  # the next request loads it from disk

        ops.unreadable["state.yaml"] = errno.EACCES  # what chmod 000 does to a non-root server
        for path in (f"/api/v1/sessions/{sid}", f"/api/v1/sessions/{sid}/messages"):
            refused = await s.client.get(path)
            assert refused.status_code == 503, refused.text
            assert refused.headers["content-type"] == PROBLEM
            assert "Retry-After" in refused.headers
            detail = refused.json()["detail"]
            assert "state.yaml" in detail
            assert "Permission denied" in detail
        assert (tmp_path / ".duragent" / "sessions" / sid / "state.yaml").is_file()

        ops.unreadable.clear()  # chmod back
        assert (await s.client.get(f"/api/v1/sessions/{sid}")).status_code == 200
        assert await _user_texts(s.client, sid) == ["first"]


async def test_a_quarantined_session_answers_409_on_every_request_until_restored(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one"))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "first"})
        await s.runtime.registry.stop(sid)
        state = tmp_path / ".duragent" / "sessions" / sid / "state.yaml"
        good = state.read_text()
        state.write_text("session_id: [broken\n")

        requests = [
            ("GET", f"/api/v1/sessions/{sid}", None),
            ("GET", f"/api/v1/sessions/{sid}/messages", None),
            ("POST", f"/api/v1/sessions/{sid}/messages", {"content": "x"}),
            ("GET", f"/api/v1/sessions/{sid}", None),
            ("DELETE", f"/api/v1/sessions/{sid}", None),
        ]
        for method, path, body in requests:
            response = await s.client.request(method, path, json=body)
            assert response.status_code == 409, (method, path, response.text)
            assert response.headers["content-type"] == PROBLEM
            problem = response.json()
            assert problem["session_id"] == sid
            assert problem["session_status"] == "quarantined"
            assert "unreadable" in problem["reason"]
            assert f"duragent session restore {sid}" in problem["detail"]

        (listed,) = (await s.client.get("/api/v1/sessions")).json()["sessions"]
        assert listed["session_id"] == sid
        assert listed["status"] == "quarantined"
        assert "unreadable" in listed["reason"]

        kept = tmp_path / ".duragent" / "sessions" / "_quarantine" / sid
        (kept / "state.yaml").write_text(good)  # the operator's fix, then the restore
        s.runtime.registry.store.restore(sid)
        assert (await s.client.get(f"/api/v1/sessions/{sid}")).status_code == 200
        assert await _user_texts(s.client, sid) == ["first"]


async def test_a_disk_that_fills_during_the_turn_answers_507_and_the_retry_is_answered(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        ops = _inject(s.runtime.registry.store)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="lost to a full disk", delay=0.3))
        turn = asyncio.create_task(
            s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "question"})
        )
        for _ in range(12_000):  # the message is recorded once the model has been asked
            if s.server.requests:
                break
            await asyncio.sleep(0.01)
        ops.failing = True
        full = await turn
        assert full.status_code == 507, full.text
        assert "No space left on device" in full.json()["detail"]

        ops.failing = False
        s.server.enqueue(Reply(text="answered"))
        retry = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "again"})
        assert retry.status_code == 200, retry.text
        history = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
        assert [m["content"] for m in history if m["role"] == "assistant"] == ["answered"]


async def test_a_session_whose_snapshot_cannot_be_read_is_listed_as_unavailable_with_the_cause(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        ops = _inject(s.runtime.registry.store)
        ids = []
        for _ in range(2):
            created = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
            ids.append(created.json()["session_id"])
        for sid in ids:
            await s.runtime.registry.stop(sid)  # listed from their snapshots, not their actors

        ops.unreadable["state.yaml"] = errno.EIO
        listing = await s.client.get("/api/v1/sessions")
        assert listing.status_code == 200, listing.text
        entries = {e["session_id"]: e for e in listing.json()["sessions"]}
        assert set(entries) == set(ids)  # nothing accepted disappears from view
        for sid in ids:
            entry = entries[sid]
            assert entry["status"] == "unavailable"
            assert "state.yaml" in entry["reason"]
            assert "Input/output error" in entry["reason"]
            assert {"agent", "created_at", "updated_at"} <= set(entry)  # the usual shape

        ops.unreadable.clear()
        entries = {
            e["session_id"]: e for e in (await s.client.get("/api/v1/sessions")).json()["sessions"]
        }
        assert {entries[sid]["status"] for sid in ids} == {"active"}
        assert all("reason" not in entries[sid] for sid in ids)


async def test_a_session_with_an_unparseable_snapshot_is_listed_until_it_is_checked(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        await s.runtime.registry.stop(sid)
        (tmp_path / ".duragent" / "sessions" / sid / "state.yaml").write_text("agent: [broken\n")

        (entry,) = (await s.client.get("/api/v1/sessions")).json()["sessions"]
        assert entry["session_id"] == sid
        assert entry["status"] == "unavailable"
        assert "state.yaml" in entry["reason"]
        assert "checked when the session is next used" in entry["reason"]

        assert (await s.client.get(f"/api/v1/sessions/{sid}")).status_code == 409
        (entry,) = (await s.client.get("/api/v1/sessions")).json()["sessions"]
        assert entry["status"] == "quarantined"


class _FullOnReply(FailingFileOps):
    """The disk fills just as the turn's reply is written (the user message is already on disk)."""

    armed = False

    def write(self, fd: int, data: bytes) -> int:
        if self.armed and b'"assistant_response"' in data:
            self.failing = True  # from here on every write fails, as on a full disk
        return super().write(fd, data)


async def test_a_disk_that_fills_during_the_reply_says_the_message_was_recorded_once(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        ops = _FullOnReply()
        _inject(s.runtime.registry.store, ops)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one"))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "first"})

        ops.armed = True
        s.server.enqueue(Reply(text="lost reply"))
        full = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "second"})
        assert full.status_code == 507, full.text
        problem = full.json()
        assert problem["errno"] == "ENOSPC"
        assert problem["message_recorded"] is True
        assert "was not recorded" not in problem["detail"]
        assert "do not send it again" in problem["detail"]

        ops.armed = ops.failing = False  # space freed
        await _wait_ready(s.client)
        history = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
        second = [m for m in history if m["role"] == "user" and m["content"] == "second"]
        assert [m["seq"] for m in second] == [problem["message_seq"]]
        assert "lost reply" not in [m["content"] for m in history]

        s.server.enqueue(Reply(text="three"))
        third = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "third"})
        assert third.status_code == 200, third.text
        assert third.json()["content"] == "three"
        assert await _user_texts(s.client, sid) == ["first", "second", "third"]


async def test_a_disk_that_fills_after_an_approval_was_recorded_says_it_was_recorded(
    tmp_path: Path,
) -> None:
    bash = "  tools:\n    - type: builtin\n      name: bash\n"
    policy = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
    async with served(tmp_path, tools=bash, policy=policy) as s:
        ops = _FullOnReply()
        _inject(s.runtime.registry.store, ops)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        call = ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]))
        asked = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "run"})
        assert asked.status_code == 202, asked.text

        ops.armed = True
        s.server.enqueue(Reply(text="lost reply"))
        approve = {"call_id": "c1", "decision": "allow_once"}
        full = await s.client.post(f"/api/v1/sessions/{sid}/approve", json=approve)
        assert full.status_code == 507, full.text
        assert full.json()["message_recorded"] is True
        assert "do not send it again" in full.json()["detail"]

        ops.armed = ops.failing = False
        await _wait_ready(s.client)
        again = await s.client.post(f"/api/v1/sessions/{sid}/approve", json=approve)
        assert again.status_code == 404  # the decision is on disk: nothing is pending
        s.server.enqueue(Reply(text="next"))
        nxt = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "next?"})
        assert nxt.status_code == 200, nxt.text
