"""Issue #24 items 2 and 3: two ``duragent serve`` nodes on one PostgreSQL database.

Each node is its own workspace folder with the same agent files (as two machines would
have), its own ``store.node_id`` and ``advertise_url``. A client talks to whichever node it
likes; Telegram hands the same webhook update to both; a schedule runs on the cluster.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from duragent.testing.fake_telegram import FakeTelegram
from tests.acceptance.served import Served, Workspace
from tests.acceptance.test_postgres_store import url
from tests.store import postgres_db

TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"
SECRET = "webhook-secret-of-the-test"
LEASE = 2


def node(root: Path, schema: str, name: str, gateways: str = "") -> Served:
    ws = Workspace(root / name, env={"DATABASE_URL": url(postgres_db.DSN)})
    ws.agent()
    served = Served(ws)
    ws.config(
        f"store:\n  backend: postgres\n  dsn: ${{DATABASE_URL}}\n  schema: {schema}\n"
        f"  node_id: {name}\n  advertise_url: {served.url}\n  lease_seconds: {LEASE}\n" + gateways
    )
    return served


def telegram_nodes(
    root: Path, schema: str, telegram: FakeTelegram, extra: str
) -> tuple[Served, Served]:
    """Nodes a and b serving one bot of ``telegram`` (``extra``: more of its YAML section)."""
    gateway = (
        "gateways:\n  telegram:\n    bot_token: ${TELEGRAM_BOT_TOKEN}\n"
        f"    base_url: {telegram.url}\n" + extra
    )
    a, b = node(root, schema, "a", gateway), node(root, schema, "b", gateway)
    for served in (a, b):
        served.workspace.env["TELEGRAM_BOT_TOKEN"] = TOKEN
    return a, b


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


def test_a_session_used_through_both_nodes_is_one_ordered_conversation(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    with a, b:
        sid = a.new_session()
        for n in range(6):
            answer = (a if n % 2 == 0 else b).say(sid, f"m{n}")
            assert answer.status_code == 200, answer.text
            assert f'"m{n}"' in answer.json()["content"]  # the reply to this message
        with b.http.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "m6"}
        ) as stream:
            assert stream.status_code == 200
            events = [
                line.removeprefix("event: ")
                for line in stream.iter_lines()
                if line.startswith("event: ")
            ]
        assert events[0] == "start"
        assert events[-1] == "done"
        from_a, from_b = a.history(sid), b.history(sid)
    assert from_a == from_b
    users = [m["content"] for m in from_a if m["role"] == "user"]
    assert users == [f"m{n}" for n in range(7)]
    roles = [m["role"] for m in from_a]
    assert roles == ["user", "assistant"] * 7
    seqs = [int(str(m["seq"])) for m in from_a]
    assert seqs == sorted(seqs)


def test_messages_sent_at_once_to_both_nodes_are_each_recorded_once(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    with a, b:
        sid = b.new_session()
        answers: list[int] = []

        def send(served: Served, text: str) -> None:
            with httpx.Client(base_url=served.url, timeout=60) as client:
                answers.append(
                    client.post(
                        f"/api/v1/sessions/{sid}/messages", json={"content": text}
                    ).status_code
                )

        threads = [
            threading.Thread(target=send, args=(a if n % 2 else b, f"c{n}")) for n in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        history = a.history(sid)
    assert answers == [200] * 8
    said = sorted(str(m["content"]) for m in history if m["role"] == "user")
    assert said == sorted(f"c{n}" for n in range(8))
    seqs = [int(str(m["seq"])) for m in history]
    assert len(set(seqs)) == len(seqs)


@pytest.mark.slow  # ~4 s; the default suite has tests/gateways/telegram/test_cluster.py
def test_a_webhook_update_delivered_to_both_nodes_is_answered_once(
    tmp_path: Path, schema: str
) -> None:
    with FakeTelegram(token=TOKEN) as telegram:
        a, b = telegram_nodes(
            tmp_path,
            schema,
            telegram,
            f"    webhook_url: https://bot.example.com/tg/hook\n    webhook_secret: {SECRET}\n",
        )
        with a, b:
            update = telegram.push_message(chat_id=4242, text="hello from telegram")
            statuses: list[int] = []

            def deliver(served: Served) -> None:
                with httpx.Client(base_url=served.url, timeout=120) as client:
                    statuses.append(
                        client.post(
                            "/tg/hook",
                            json=update,
                            headers={"X-Telegram-Bot-Api-Secret-Token": SECRET},
                        ).status_code
                    )

            threads = [threading.Thread(target=deliver, args=(s,)) for s in (a, b)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            deadline = time.monotonic() + 120
            while not telegram.sent_messages(4242) and time.monotonic() < deadline:
                time.sleep(0.1)
            for served in (a, b):  # Telegram sends it again after a 503 or a timeout
                deliver(served)
            time.sleep(1.5)  # room for a second answer, if one were coming
            sent = telegram.sent_messages(4242)
    assert all(status in (200, 503) for status in statuses[:2]), statuses
    assert statuses[2:] == [200, 200], statuses  # a copy of a taken update is acknowledged
    assert len(sent) == 1, sent
    assert "hello from telegram" in sent[0]


@pytest.mark.slow  # ~7 s; the default suite has tests/scheduler/test_cluster.py
def test_a_schedule_fires_each_due_time_once_across_the_cluster(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    with a, b:
        schedule_id = b.ticking_schedule()
        time.sleep(5)
        assert a.http.delete(f"/api/v1/schedules/{schedule_id}").status_code in (200, 204)
        shown = b.http.get(f"/api/v1/schedules/{schedule_id}").json()
    runs = shown["runs"]
    started = [r["due"] for r in runs if r["status"] == "running"]
    finished = [r["due"] for r in runs if r["status"] == "ok"]
    assert len(started) == len(set(started)), runs  # no due time started twice
    assert len(finished) == len(set(finished)), runs
    assert set(finished) <= set(started), runs  # the newest may still be running
    assert 3 <= len(started) <= 7, runs


def test_a_killed_nodes_session_is_taken_over_by_the_other_once_its_lease_expires(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    with a, b:
        sid = a.new_session()
        assert a.say(sid, "before").status_code == 200
        assert a.proc is not None
        a.proc.kill()
        a.proc.wait(120)
        killed = time.monotonic()
        statuses: list[int] = []
        while True:
            answer = b.say(sid, "after")
            statuses.append(answer.status_code)
            if answer.status_code == 200:
                break
            assert answer.status_code == 503, answer.text
            assert "Retry-After" in answer.headers
            assert time.monotonic() - killed < LEASE + 10, statuses
            time.sleep(0.2)
        took = time.monotonic() - killed
        said = [m["content"] for m in b.history(sid) if m["role"] == "user"]
    assert said == ["before", "after"]
    assert took < LEASE + 5, (took, statuses)


def test_an_approval_asked_through_one_node_is_answered_through_the_other(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    for served in (a, b):
        served.workspace.agent(
            spec_extra="  tools:\n    - type: builtin\n      name: bash\n", policy="mode: ask\n"
        )
    with a, b:
        sid = a.new_session()
        asked = a.say(sid, 'please\n!call bash {"command": "echo approved-run"}')
        assert asked.status_code == 202, asked.text
        call_id = asked.json()["call_id"]
        answer = b.http.post(
            f"/api/v1/sessions/{sid}/approve", json={"call_id": call_id, "decision": "allow_once"}
        )
        assert answer.status_code == 200, answer.text
        history = a.history(sid)
    results = [m for m in history if m["role"] == "tool"]
    assert len(results) == 1
    assert "approved-run" in str(results[0]["content"])


def test_a_stream_forwarded_to_the_owner_carries_its_summary_event(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    for served in (a, b):
        served.workspace.agent(spec_extra="    max_input_tokens: 4096\n")
    words = " ".join(f"word{k}" for k in range(60))
    with a, b:
        sid = a.new_session()
        seen: list[str] = []
        for n in range(12):
            with b.http.stream(
                "POST", f"/api/v1/sessions/{sid}/stream", json={"content": f"{n}: {words}"}
            ) as stream:
                assert stream.status_code == 200
                seen += [
                    line.removeprefix("event: ")
                    for line in stream.iter_lines()
                    if line.startswith("event: ")
                ]
            if "summary" in seen:
                break
        markers = [m for m in a.history(sid) if m["role"] == "summary"]
    assert "summary" in seen
    assert markers


def test_a_saved_tool_output_is_read_back_on_the_node_that_took_the_session_over(
    tmp_path: Path, schema: str
) -> None:
    a, b = node(tmp_path, schema, "a"), node(tmp_path, schema, "b")
    tools = (
        "  session:\n    context:\n      max_tool_result_tokens: 200\n"
        "  tools:\n    - type: builtin\n      name: bash\n"
    )
    for served in (a, b):
        served.workspace.agent(spec_extra=tools, policy="mode: dangerous\n")
    with a, b:
        sid = a.new_session()
        assert a.say(sid, '!call bash {"command": "seq 1 3000"}').status_code == 200
        tool = next(m for m in a.history(sid) if m["role"] == "tool")
        output_id = str(tool["content"]).split("full output saved as ")[1].split(",")[0]
        assert a.proc is not None
        a.proc.kill()
        a.proc.wait(120)
        args = json.dumps({"id": output_id, "mode": "tail", "lines": 2})
        deadline = time.monotonic() + LEASE + 120
        while (answer := b.say(sid, f"!call tool_output {args}")).status_code == 503:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text
    assert "2999\n3000" in answer.json()["content"]


@pytest.mark.slow  # ~6 s; the default suite has tests/gateways/telegram/test_cluster.py
def test_with_long_polling_one_node_polls_the_other_stands_by_and_each_message_is_answered_once(
    tmp_path: Path, schema: str
) -> None:
    with FakeTelegram(token=TOKEN) as telegram:
        a, b = telegram_nodes(tmp_path, schema, telegram, "    poll_timeout_seconds: 1\n")
        with a, b:
            deadline = time.monotonic() + 120
            states: list[str] = []
            while time.monotonic() < deadline:
                states = sorted(
                    str(s.http.get("/readyz").json().get("gateways", {}).get("telegram"))
                    for s in (a, b)
                )
                if states[0].startswith("running") and states[1].startswith("standby"):
                    break
                time.sleep(0.2)
            assert states[0].startswith("running"), states
            assert states[1].startswith("standby: another node polls Telegram"), states
            for n in range(3):  # one at a time (messages sent during a turn join the next)
                telegram.push_message(chat_id=5151, text=f"poll {n}")
                deadline = time.monotonic() + 120
                while len(telegram.sent_messages(5151)) <= n and time.monotonic() < deadline:
                    time.sleep(0.05)
            time.sleep(1)  # room for a second answer, if one were coming
            sent = telegram.sent_messages(5151)
    assert len(sent) == 3, sent
    assert [f"poll {n}" in text for n, text in enumerate(sent)] == [True] * 3
