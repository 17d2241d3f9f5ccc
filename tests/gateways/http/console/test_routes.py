"""The console's routes over plain HTTP: what the shell holds, who may read, what views give."""

from __future__ import annotations

import asyncio
import re
from importlib import resources
from pathlib import Path

import httpx

from duragent.gateways.http.console.routes import CONSOLE_HEADERS
from duragent.testing import Reply, ToolCallReply
from tests.gateways.http.api_fixtures import served
from tests.gateways.telegram.rig import telegram_rig

TOKEN = "console-secret-7f3a"
BASH_TOOL = "  tools:\n    - type: builtin\n      name: bash\n"
ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
STATIC = resources.files("duragent.gateways.http.console") / "static"


async def test_the_shell_is_the_same_static_page_for_everyone_and_forbids_inline_script(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, token=TOKEN, server_yaml=f"  api_token: {TOKEN}\n") as s:
        port = s.runtime.http_port
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as anonymous:
            shell = await anonymous.get("/ui")
            deep = await anonymous.get("/ui/sessions/whatever")
            script = await anonymous.get("/ui/static/console.js")
            missing = await anonymous.get("/ui/static/../app.py")
            other = await anonymous.get("/ui/static/secrets.txt")
        assert shell.status_code == deep.status_code == script.status_code == 200
        assert shell.text == deep.text  # the path is read by the script, never echoed
        assert TOKEN not in shell.text
        csp = shell.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        for name, value in CONSOLE_HEADERS.items():
            assert shell.headers[name] == value
        assert script.headers["content-type"].startswith("text/javascript")
        assert "innerHTML" not in script.text.replace("never assigns innerHTML", "")
        assert missing.status_code == other.status_code == 404


def test_the_script_puts_children_into_the_page_only_through_its_helper_that_drops_nulls() -> None:
    """``append``/``prepend``/``replaceChildren`` print a null argument as the text "null"."""
    script = (STATIC / "console.js").read_text()
    calls = re.findall(r"\.(?:append|prepend|replaceChildren)\(([^)]{0,9})", script)
    assert calls  # the helper itself is found
    assert all(arg.startswith("...nodes(") for arg in calls), calls


async def test_the_console_views_need_the_api_token_like_the_api(tmp_path: Path) -> None:
    async with served(tmp_path, token=TOKEN, server_yaml=f"  api_token: {TOKEN}\n") as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        port = s.runtime.http_port
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as anonymous:
            for path in ("/ui/api/sessions", f"/ui/api/sessions/{sid}"):
                assert (await anonymous.get(path)).status_code == 401
                bad = {"authorization": "Bearer nope"}
                assert (await anonymous.get(path, headers=bad)).status_code == 401
                assert (await s.client.get(path)).status_code == 200


async def test_in_loopback_mode_the_console_refuses_rebinding_and_cross_site_pages(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        rebound = await s.client.get("/ui", headers={"host": "evil.example:8080"})
        assert rebound.status_code == 403
        view = await s.client.get("/ui/api/sessions", headers={"origin": "https://evil.example"})
        assert view.status_code == 403
        form = await s.client.post(
            "/api/v1/sessions",
            content=b"agent=bot",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code == 415
        assert (await s.client.get("/ui", headers={"host": "localhost:1"})).status_code == 200


async def test_the_session_view_has_budgets_tool_traffic_and_the_pending_call(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=BASH_TOOL, policy=ASK) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="hi there"))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hello"})
        call = ToolCallReply(name="bash", arguments={"command": "echo x"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "run"})
        view = (await s.client.get(f"/ui/api/sessions/{sid}")).json()
        listing = (await s.client.get("/ui/api/sessions")).json()["sessions"]
    assert view["pending_approval"]["call_id"] == "c1"
    assert view["pending_approval"]["command"] == "echo x"
    assert view["session"]["gateway"] is None
    replies = [m for m in view["messages"] if m["role"] == "assistant"]
    assert replies[0]["content"] == "hi there"
    budget = replies[0]["budget"]
    assert budget["window"] == 16000
    assert 0 < budget["request_tokens"] <= budget["limit"]
    assert replies[1]["tool_calls"][0]["approval"] == {"command": "echo x", "decision": None}
    assert [e["session_id"] for e in listing] == [sid]
    assert set(listing[0]) >= {"status", "updated_at", "gateway", "gateway_chat_id"}


async def test_an_unknown_session_is_a_404_problem(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        missing = await s.client.get("/ui/api/sessions/session_nope")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"


async def test_the_view_says_a_reply_is_awaited_while_a_turn_runs(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        view = f"/ui/api/sessions/{sid}"
        assert (await s.client.get(view)).json()["session"]["awaiting_reply"] is False
        s.server.enqueue(Reply(text="slow", delay=0.5))
        path = f"/api/v1/sessions/{sid}/messages"
        turn = asyncio.create_task(s.client.post(path, json={"content": "hi"}))
        for _ in range(12_000):
            during = (await s.client.get(view)).json()["session"]
            if during["last_seq"] > 1:
                break
            await asyncio.sleep(0.01)
        assert during["awaiting_reply"] is True
        assert (await turn).status_code == 200
        assert (await s.client.get(view)).json()["session"]["awaiting_reply"] is False


async def test_the_listing_names_each_sessions_front_end_and_chat_as_its_own_view_does(
    tmp_path: Path,
) -> None:
    fields = ("gateway", "gateway_chat_id", "gateway_chat_type", "front_end", "chat")
    async with telegram_rig(tmp_path) as rig:
        rig.tg.push_message(42, "hello", first_name="Ann")
        await rig.replies(42)
        await rig.settle()
        made = await rig.http.post("/api/v1/sessions", json={"agent": "bot"})
        http_sid = made.json()["session_id"]
        said = {"model": "bot", "messages": [{"role": "user", "content": "hi"}]}
        openai_sid = (await rig.http.post("/v1/chat/completions", json=said)).headers[
            "x-duragent-session"
        ]
        listing = (await rig.http.get("/ui/api/sessions")).json()["sessions"]
        views = {
            e["session_id"]: (await rig.http.get(f"/ui/api/sessions/{e['session_id']}")).json()
            for e in listing
        }
    listed = {e["session_id"]: e for e in listing}
    [telegram_sid] = set(listed) - {http_sid, openai_sid}
    telegram = listed[telegram_sid]
    assert (telegram["gateway"], telegram["gateway_chat_id"]) == ("telegram", "42")
    assert listed[openai_sid]["gateway"] == "openai"
    for sid, entry in listed.items():
        page = views[sid]["session"]
        assert {k: entry[k] for k in fields} == {k: page[k] for k in fields}, sid
    assert (telegram["front_end"], telegram["chat"]) == ("telegram", "42 (dm)")
    assert (listed[openai_sid]["front_end"], listed[openai_sid]["chat"]) == ("openai", "")
    assert (listed[http_sid]["front_end"], listed[http_sid]["chat"]) == ("http", "")


async def test_a_call_cancelled_by_a_newer_message_is_marked_cancelled_not_denied(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=BASH_TOOL, policy=ASK) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        call = ToolCallReply(name="bash", arguments={"command": "echo x"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]), Reply(text="never mind then"))
        path = f"/api/v1/sessions/{sid}/messages"
        assert (await s.client.post(path, json={"content": "run"})).status_code == 202
        assert (await s.client.post(path, json={"content": "no, stop"})).status_code == 200
        view = (await s.client.get(f"/ui/api/sessions/{sid}")).json()
    [call_shown] = [c for m in view["messages"] for c in m.get("tool_calls") or ()]
    assert call_shown["approval"] == {
        "command": "echo x",
        "decision": "deny",  # as recorded
        "cancelled": "approval cancelled: a new message arrived first",
    }
    assert view["pending_approval"] is None


async def test_the_session_view_lists_the_files_the_agent_sent_under_its_reply(
    tmp_path: Path,
) -> None:
    report = b"%PDF-1.4 the numbers"
    send_file = "  tools:\n    - type: builtin\n      name: send_file\n"
    async with served(tmp_path, tools=send_file) as s:
        (s.root / ".duragent" / "agents" / "bot" / "report.pdf").write_bytes(report)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        call = ToolCallReply(name="send_file", arguments={"path": "report.pdf", "caption": "Q3"})
        s.server.enqueue(Reply(tool_calls=[call]), Reply(text="Attached."))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "the report"})
        view = (await s.client.get(f"/ui/api/sessions/{sid}")).json()
        replies = [m for m in view["messages"] if m["role"] == "assistant"]
        (shown,) = replies[-1]["attachments"]
        got = await s.client.get(shown["url"])
    assert replies[-1]["content"] == "Attached."
    assert (shown["name"], shown["kind"], shown["caption"]) == ("report.pdf", "document", "Q3")
    assert shown["url"] == f"/api/v1/sessions/{sid}/attachments/{shown['sha256']}"
    assert got.content == report


async def test_the_session_view_lists_a_messages_attachments_with_their_download_path(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="got it"))
        await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            data={"content": "a note"},
            files=[("f", ("note.txt", b"remember the milk", "text/plain"))],
        )
        view = (await s.client.get(f"/ui/api/sessions/{sid}")).json()
        shell = await s.client.get("/ui")
    (user,) = [m for m in view["messages"] if m["role"] == "user"]
    (shown,) = user["attachments"]
    assert (shown["name"], shown["kind"], shown["size"]) == ("note.txt", "document", 17)
    assert shown["url"] == f"/api/v1/sessions/{sid}/attachments/{shown['sha256']}"
    # the script shows images from blob: URLs of bytes it fetched with the token
    assert "img-src 'self' blob:;" in shell.headers["content-security-policy"]
