"""Files the agent sends (``send_file``) come back over HTTP as links to their stored bytes.

The real server against the scripted model: the reply's JSON, the stream's ``done`` event,
``POST …/approve`` and history list each file (kind, mime, size, sha256, name, caption, url),
and the download serves the bytes a reply named, never bytes no message of the session named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from duragent.gateways.http.openapi.document import openapi_document
from duragent.testing import Fault, Reply, ToolCallReply
from tests.frontkit.media_kit import png, sha256
from tests.gateways.http.api.test_stream import read_events
from tests.gateways.http.api_fixtures import Served, served

SEND_FILE = "  tools:\n    - type: builtin\n      name: send_file\n"
BASH_AND_SEND_FILE = SEND_FILE + "    - type: builtin\n      name: bash\n"
ASK_FOR_BASH = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
allow:
  - "builtin:send_file:*"
"""
PHOTO = png(30, 20)
PDF = b"%PDF-1.4\n% the quarterly report\n"


def sends(*files: dict[str, Any], text: str = "Here it is.") -> list[Reply]:
    """The model's script: one call of ``send_file`` per file, then the reply's words."""
    calls = [ToolCallReply(name="send_file", arguments=a, id=f"f{i}") for i, a in enumerate(files)]
    return [Reply(tool_calls=calls), Reply(text=text)]


def agent_file(s: Served, name: str, data: bytes) -> None:
    (s.root / ".duragent" / "agents" / "bot" / name).write_bytes(data)


async def new_session(s: Served) -> str:
    made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
    session_id: str = made.json()["session_id"]
    return session_id


async def history(s: Served, sid: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = (
        await s.client.get(f"/api/v1/sessions/{sid}/messages")
    ).json()["messages"]
    return messages


def shown(
    sid: str, data: bytes, name: str, mime: str, kind: str, caption: str | None = None
) -> Any:
    """How the API lists one file the agent sent."""
    digest = sha256(data)
    item: dict[str, Any] = {"kind": kind, "mime": mime, "size": len(data), "sha256": digest}
    item["name"] = name
    if caption is not None:
        item["caption"] = caption
    return item | {"url": f"/api/v1/sessions/{sid}/attachments/{digest}"}


def documented(name: str, body: Any) -> None:
    """``body`` matches the OpenAPI document's schema ``name``, every member described there."""
    document = openapi_document("test")
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    jsonschema.validate(body, schema)
    schemas = document["components"]["schemas"]
    assert set(body) <= set(schemas[name]["properties"]), set(body)
    for item in body.get("attachments") or ():  # caption included
        assert set(item) <= set(schemas["Attachment"]["properties"]), set(item)


async def test_a_file_the_agent_sends_is_in_the_reply_with_a_url_that_downloads_its_bytes(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        agent_file(s, "chart.png", PHOTO)
        agent_file(s, "report.pdf", PDF)
        sid = await new_session(s)
        s.server.enqueue(
            *sends({"path": "chart.png", "caption": "Sales by month"}, {"path": "report.pdf"})
        )
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "both"})
        assert sent.status_code == 200, sent.text
        reply = sent.json()
        downloads = [await s.client.get(item["url"]) for item in reply["attachments"]]
    assert reply["content"] == "Here it is."
    assert reply["attachments"] == [
        shown(sid, PHOTO, "chart.png", "image/png", "image", "Sales by month"),
        shown(sid, PDF, "report.pdf", "application/pdf", "document"),
    ]
    assert [(d.status_code, d.content) for d in downloads] == [(200, PHOTO), (200, PDF)]
    assert downloads[0].headers["content-type"] == "image/png"
    assert 'filename="chart.png"' in downloads[0].headers["content-disposition"]
    documented("Reply", reply)


async def test_history_lists_the_files_on_the_assistants_message(tmp_path: Path) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        agent_file(s, "chart.png", PHOTO)
        sid = await new_session(s)
        s.server.enqueue(*sends({"path": "chart.png", "caption": "Sales by month"}))
        reply = (
            await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "chart"})
        ).json()
        messages = await history(s, sid)
        with_tools = (
            await s.client.get(f"/api/v1/sessions/{sid}/messages?include_tools=true")
        ).json()["messages"]
        listed = messages[-1]["attachments"]
        got = await s.client.get(listed[0]["url"])
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "attachments" not in messages[0]
    assert listed == reply["attachments"]
    assert listed == [shown(sid, PHOTO, "chart.png", "image/png", "image", "Sales by month")]
    assert got.content == PHOTO
    # the tool call's own response carries no file: only the final reply does
    assert [bool(m.get("attachments")) for m in with_tools if m["role"] == "assistant"] == [
        False,
        True,
    ]
    for message in messages:
        documented("Message", message)


async def test_the_streams_done_event_lists_the_files_of_the_reply(tmp_path: Path) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        agent_file(s, "report.pdf", PDF)
        sid = await new_session(s)
        s.server.enqueue(*sends({"path": "report.pdf", "caption": "Q3"}, text="Attached."))
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "the report"}
        ) as response:
            events = [(name, data) for _, name, data in await read_events(response)]
        done = events[-1][1]
        got = await s.client.get(done["attachments"][0]["url"])
    assert events[-1][0] == "done"
    assert done["status"] == "complete"
    assert done["attachments"] == [
        shown(sid, PDF, "report.pdf", "application/pdf", "document", "Q3")
    ]
    assert got.content == PDF
    stream_schema = openapi_document("test")["paths"]["/api/v1/sessions/{session_id}/stream"]
    event_schema = stream_schema["post"]["responses"]["200"]["content"]["text/event-stream"]
    [done_schema] = [
        e["properties"]["data"]["contentSchema"]
        for e in event_schema["schema"]["oneOf"]
        if e["properties"]["event"]["const"] == "done"
    ]
    components = openapi_document("test")["components"]
    jsonschema.validate(done, done_schema | {"components": components})
    assert set(done) <= set(done_schema["properties"])


async def test_a_reply_without_files_has_no_attachments_member(tmp_path: Path) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="Just words."), Reply(text="Streamed words."))
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "again"}
        ) as response:
            done = (await read_events(response))[-1][2]
        messages = await history(s, sid)
    assert "attachments" not in sent.json()
    assert "attachments" not in done
    assert all("attachments" not in m for m in messages)


async def test_bytes_kept_for_a_reply_never_recorded_are_served_only_once_a_reply_names_them(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        agent_file(s, "chart.png", PHOTO)
        sid = await new_session(s)
        url = f"/api/v1/sessions/{sid}/attachments/{sha256(PHOTO)}"
        s.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="send_file", arguments={"path": "chart.png"})]),
            Fault.unauthorized(),
        )
        failed = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
        before = await s.client.get(url)  # kept by the tool, named by no message yet
        s.server.enqueue(Reply(text="Here is the chart after all."))
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "again"})
        after = await s.client.get(url)
    assert failed.status_code == 502
    assert before.status_code == 404
    assert [a["url"] for a in sent.json()["attachments"]] == [url]
    assert (after.status_code, after.content) == (200, PHOTO)


async def test_another_sessions_reply_file_is_not_served(tmp_path: Path) -> None:
    async with served(tmp_path, tools=SEND_FILE) as s:
        agent_file(s, "chart.png", PHOTO)
        sid, other = await new_session(s), await new_session(s)
        s.server.enqueue(*sends({"path": "chart.png"}))
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
        own = await s.client.get(sent.json()["attachments"][0]["url"])
        theirs = await s.client.get(f"/api/v1/sessions/{other}/attachments/{sha256(PHOTO)}")
    assert own.status_code == 200
    assert theirs.status_code == 404


async def test_files_sent_before_an_approval_come_back_with_the_approved_reply(
    tmp_path: Path,
) -> None:
    bash = ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c1")
    async with served(tmp_path, tools=BASH_AND_SEND_FILE, policy=ASK_FOR_BASH) as s:
        agent_file(s, "chart.png", PHOTO)
        sid = await new_session(s)
        s.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="send_file", arguments={"path": "chart.png"})]),
            Reply(tool_calls=[bash]),
            Reply(text="Ran it; the chart is attached."),
        )
        paused = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
        approved = await s.client.post(
            f"/api/v1/sessions/{sid}/approve", json={"call_id": "c1", "decision": "allow_once"}
        )
    assert paused.status_code == 202, paused.text
    assert approved.status_code == 200, approved.text
    assert approved.json()["attachments"] == [shown(sid, PHOTO, "chart.png", "image/png", "image")]
    documented("Reply", approved.json())
