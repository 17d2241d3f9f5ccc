"""The web console in a real headless Chromium, against a real server and the scripted model."""

from __future__ import annotations

import asyncio
import io
import logging
import re
from pathlib import Path

import pytest
from PIL import Image

from duragent.testing import Reply, ToolCallReply
from tests.gateways.http.api_fixtures import Served, served
from tests.gateways.http.console.browser_support import Watched, browser, watched

__all__ = ["browser", "watched"]  # fixtures, imported to be found

pytestmark = pytest.mark.asyncio(loop_scope="session")

BASH_TOOL = "  tools:\n    - type: builtin\n      name: bash\n"
ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
TOKEN = "console-secret-7f3a"


def base(s: Served) -> str:
    return f"http://127.0.0.1:{s.runtime.http_port}"


async def new_session(s: Served) -> str:
    made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
    session_id: str = made.json()["session_id"]
    return session_id


async def test_logging_in_with_the_token_shows_the_agents_and_sessions(
    tmp_path: Path, watched: Watched, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    page = watched.page
    async with served(tmp_path, token=TOKEN, server_yaml=f"  api_token: {TOKEN}\n") as s:
        sid = await new_session(s)
        await page.goto(base(s) + "/ui")
        await page.locator("#login").wait_for()
        await page.fill("#token", "wrong")
        await page.click("#login-form button")
        await page.get_by_text("The token was refused.").wait_for()
        await page.fill("#token", TOKEN)
        await page.click("#login-form button")
        await page.locator("#agents td", has_text="test bot").wait_for()
        row = page.locator(f'#sessions tr[data-session="{sid}"]')
        assert "active" in await row.inner_text()
        assert "http" in await row.inner_text()
        assert await page.evaluate("sessionStorage.getItem('duragent.api_token')") == TOKEN
        assert not any(TOKEN in url for url in watched.requests)
        assert not await page.locator("#login").is_visible()
        await page.click("#logout")
        await page.locator("#login").wait_for()
        assert await page.evaluate("sessionStorage.length") == 0
    assert caplog.text  # the server's log, which never holds the token
    assert TOKEN not in caplog.text


async def test_a_message_from_the_chat_box_streams_its_reply_then_shows_its_budget(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    async with served(tmp_path) as s:
        await page.goto(base(s) + "/ui")
        await page.click("text=New session")
        await page.wait_for_url(re.compile(r"/ui/sessions/[^/]+$"))
        chunks = ["Streaming ", "works ", "here."]
        s.server.enqueue(Reply(text="".join(chunks), chunks=chunks, chunk_delay=0.15))
        await page.fill("#message", "hello console")
        await page.click("#send")
        # the reply grows in the live bubble before the turn ends
        await page.wait_for_function(
            "() => (document.getElementById('streamed') || {}).textContent === 'Streaming '"
        )
        final = page.locator("#history .msg.assistant", has_text="Streaming works here.")
        await final.wait_for()
        assert await page.locator("#history .msg.user", has_text="hello console").count() == 1
        budget = final.locator("details.budget")
        assert "tokens (window 16000)" in await budget.locator("summary").inner_text()
        await budget.locator("summary").click()
        assert await budget.get_by_text("request tokens").is_visible()
        assert watched.errors == []


async def test_a_pending_tool_call_is_approved_from_the_console(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    async with served(tmp_path, tools=BASH_TOOL, policy=ASK) as s:
        sid = await new_session(s)
        command = "echo approved-ran; seq 1 30"  # 31 lines: a long result, collapsed
        call = ToolCallReply(name="bash", arguments={"command": command}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]))
        waiting = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
        assert waiting.status_code == 202
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        panel = page.locator("#approval")
        await panel.get_by_text(command).wait_for()
        s.server.enqueue(Reply(text="it ran"))
        await panel.get_by_role("button", name="Allow once").click()
        await page.locator("#history .msg.assistant", has_text="it ran").wait_for()
        tool = page.locator("#history .msg.tool details.long")
        assert "approved-ran … (" in await tool.locator("summary").inner_text()
        assert not await tool.get_by_text("29\n30").is_visible()
        await tool.locator("summary").click()
        assert await tool.get_by_text("29\n30").is_visible()
        assert await page.locator("#approval").count() == 0
        assert "allow_once" in await page.locator("#history .call").inner_text()


async def test_a_summary_marker_expands_to_the_summary(tmp_path: Path, watched: Watched) -> None:
    page = watched.page
    async with served(tmp_path) as s:
        sid = await new_session(s)
        for text in ("first", "second"):
            s.server.enqueue(Reply(text=f"answer to {text}"))
            await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": text})
        handle = s.runtime.registry.handle(sid)
        window = await handle.messages()
        recorded = await handle.record_summary(
            "## Goal\n- the user said first",
            last=window[1],
            tokens_before=100,
            tokens_after=20,
            model="m",
        )
        assert recorded is not None
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        marker = page.locator("#history .msg.summary details")
        await marker.wait_for()
        assert "Summary round 1" in await marker.locator("summary").inner_text()
        summary_line = marker.get_by_text("- the user said first")
        assert not await summary_line.is_visible()
        await marker.locator("summary").click()
        assert await summary_line.is_visible()


HOSTILE = [
    "<img src=x onerror=\"window.__pwned='img';alert('img')\">",
    "<script>window.__pwned='script';alert('script')</script>",
    "<svg onload=alert('svg')></svg>\"'><iframe src=javascript:alert('js')>",
]


async def test_hostile_text_from_user_model_and_tool_is_shown_literally_and_never_runs(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    payload = " ".join(HOSTILE)
    async with served(tmp_path, tools=BASH_TOOL) as s:
        sid = await new_session(s)
        command = "cat <<'EOF'\n" + payload + "\nEOF"
        call = ToolCallReply(name="bash", arguments={"command": command}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]), Reply(text="model says " + payload))
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": payload})
        assert sent.status_code == 200
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        history = page.locator("#history")
        await history.locator(".msg.assistant", has_text="model says").wait_for()
        shown = await history.inner_text()
        assert shown.count(HOSTILE[0]) >= 3  # the user's, the tool's result, the model's
        assert "model says " + payload in shown
        for tag in ("img", "script", "svg", "iframe"):
            assert await history.locator(tag).count() == 0, tag
        # and streamed: each token is appended as text, a tag split across tokens included
        s.server.enqueue(Reply(text=payload, chunks=[payload[:7], payload[7:40], payload[40:]]))
        await page.fill("#message", payload)
        await page.click("#send")
        await history.locator(".msg.assistant", has_text=re.compile("^assistant")).nth(2).wait_for()
        # users ×2, the tool's result, the model ×2 (the call's arguments show it JSON-quoted)
        assert (await history.inner_text()).count(HOSTILE[2]) == 5
        for tag in ("img", "script", "svg", "iframe"):
            assert await page.locator("#main " + tag).count() == 0, tag
        assert await page.evaluate("window.__pwned") is None
        assert watched.dialogs == []
        assert watched.errors == []


async def test_a_session_page_fits_a_phone_screen_even_with_unbroken_text(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    await page.set_viewport_size({"width": 390, "height": 844})
    async with served(tmp_path, tools=BASH_TOOL) as s:
        sid = await new_session(s)
        word = "https://example.com/" + "a" * 400
        call = ToolCallReply(name="bash", arguments={"command": f"echo {word}"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]), Reply(text=word))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": word})
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        await page.locator("#history .msg.assistant", has_text="https://").last.wait_for()
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await page.goto(f"{base(s)}/ui")
        await page.locator(f'#sessions tr[data-session="{sid}"]').wait_for()
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390


async def test_an_open_session_page_follows_a_turn_run_by_another_client(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    async with served(tmp_path) as s:
        sid = await new_session(s)
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        await page.locator("#chat").wait_for()
        s.server.enqueue(Reply(text="from elsewhere", delay=0.3))
        path = f"/api/v1/sessions/{sid}/messages"
        turn = asyncio.create_task(s.client.post(path, json={"content": "other client"}))
        await page.locator("#history .msg.assistant", has_text="from elsewhere").wait_for()
        assert await page.locator("#history .msg.user", has_text="other client").count() == 1
        assert await page.locator("#replying").count() == 0
        assert (await turn).status_code == 200


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), (20, 120, 220)).save(out, "PNG")
    return out.getvalue()


async def test_attachments_show_under_their_message_an_image_as_a_thumbnail_fetched_with_the_token(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    picture, report = png_bytes(), b"%PDF-1.4 quarterly numbers"
    hostile = "<img src=x onerror=alert(1)>.pdf"  # no quote: a form's client escapes it
    async with served(tmp_path, token=TOKEN, server_yaml=f"  api_token: {TOKEN}\n") as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="seen"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            data={"content": "two files"},
            files=[
                ("photo", ("blue.png", picture, "image/png")),
                ("doc", (hostile, report, "application/pdf")),
            ],
        )
        assert sent.status_code == 200, sent.text
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        await page.fill("#token", TOKEN)
        await page.click("#login-form button")
        user = page.locator("#history .msg.user", has_text="two files")
        thumb = user.locator('.attachment[data-kind="image"] img.thumb')
        await thumb.wait_for()
        await page.wait_for_function(
            "() => (document.querySelector('img.thumb') || {}).naturalWidth === 40"
        )
        assert (await thumb.get_attribute("src") or "").startswith("blob:")
        document = user.locator('.attachment[data-kind="document"]')
        assert "application/pdf" in await document.inner_text()
        link = document.locator("a.attachment-link")
        assert await link.inner_text() == hostile  # text, never markup
        assert await page.locator("#history img").count() == 1  # the thumbnail alone
        async with page.expect_download() as downloading:
            await link.click()
        download = await downloading.value
        assert download.suggested_filename.endswith("onerror=alert(1)_.pdf")  # Chrome's own _
        saved = Path(await download.path())
        assert await asyncio.to_thread(saved.read_bytes) == report
        assert await page.evaluate("window.__pwned") is None
        assert watched.dialogs == []
        assert not any(TOKEN in url for url in watched.requests)
        assert watched.errors == []


async def test_a_file_the_agent_sent_shows_under_its_reply_with_its_caption(
    tmp_path: Path, watched: Watched
) -> None:
    page = watched.page
    picture = png_bytes()
    send_file = "  tools:\n    - type: builtin\n      name: send_file\n"
    server_yaml = f"  api_token: {TOKEN}\n"
    async with served(tmp_path, token=TOKEN, server_yaml=server_yaml, tools=send_file) as s:
        (s.root / ".duragent" / "agents" / "bot" / "chart.png").write_bytes(picture)
        sid = await new_session(s)
        call = ToolCallReply(
            name="send_file", arguments={"path": "chart.png", "caption": "<b>Q3</b>"}
        )
        s.server.enqueue(Reply(tool_calls=[call]), Reply(text="Here is the chart."))
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "chart"})
        assert sent.status_code == 200, sent.text
        await page.goto(f"{base(s)}/ui/sessions/{sid}")
        await page.fill("#token", TOKEN)
        await page.click("#login-form button")
        reply = page.locator("#history .msg.assistant", has_text="Here is the chart.")
        file = reply.locator('.attachment[data-kind="image"]')
        await file.locator("img.thumb").wait_for()
        await page.wait_for_function(
            "() => (document.querySelector('img.thumb') || {}).naturalWidth === 40"
        )
        assert await file.locator(".caption").inner_text() == "<b>Q3</b>"  # text, never markup
        link = file.locator("a.attachment-link")
        assert await link.inner_text() == "chart.png"
        async with page.expect_download() as downloading:
            await link.click()
        saved = Path(await (await downloading.value).path())
        assert await asyncio.to_thread(saved.read_bytes) == picture
        assert watched.errors == []
        assert not any(TOKEN in url for url in watched.requests)
