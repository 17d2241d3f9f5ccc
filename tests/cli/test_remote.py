"""`duragent session show` lists a message's attachments under it (in process, a real server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.cli.remote import attachment_lines
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served


async def test_session_show_lists_each_attachment_under_its_message(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="filed"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            data={"content": "two files"},
            files=[
                ("a", ("minutes.pdf", b"%PDF" + b"x" * 2044, "application/pdf")),
                ("b", ("hi.ogg", b"OggS", "audio/ogg")),
            ],
        )
        assert sent.status_code == 200, sent.text
        urls = [
            a["url"]
            for a in (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"][0][
                "attachments"
            ]
        ]
        result = await asyncio.to_thread(
            CliRunner().invoke, app, ["session", "show", sid, "--server", str(s.client.base_url)]
        )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("user> two files")
    assert lines[at + 1 : at + 4] == [
        f"  [document] minutes.pdf (application/pdf, 2.0 KB) {urls[0]}",
        f"  [voice] hi.ogg (audio/ogg, 4 bytes) {urls[1]}",
        "assistant> filed",
    ]


def test_a_voice_notes_transcript_is_shown_under_it() -> None:
    voice = {"kind": "voice", "mime": "audio/ogg", "size": 3 * 1024 * 1024, "url": "/x"}
    assert attachment_lines({"attachments": [voice | {"transcript": "call me back"}]}) == [
        "  [voice] (no name) (audio/ogg, 3.0 MB) /x",
        "    transcript: call me back",
    ]
    assert attachment_lines({"role": "assistant", "content": "no files"}) == []
