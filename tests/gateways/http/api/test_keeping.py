"""An upload kept: an image's pixels read from its bytes, a document copied for the tools."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from PIL import Image

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served


def jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 200, 90)).save(out, "JPEG")
    return out.getvalue()


async def test_an_image_is_kept_with_its_pixels_and_the_type_its_bytes_say(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="green"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            files=[("f", ("photo.png", jpeg(), "image/png"))],  # mislabelled by the client
        )
        assert sent.status_code == 200, sent.text
        history = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
    (shown,) = history[0]["attachments"]
    assert (shown["mime"], shown["width"], shown["height"]) == ("image/jpeg", 64, 48)


async def test_a_document_is_copied_where_the_agents_tools_read_it(tmp_path: Path) -> None:
    report = b"%PDF-1.4 the numbers"
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="read it"), Reply(text="again"))
        url = f"/api/v1/sessions/{sid}/messages"
        files = [("f", ("Q3 report.pdf", report, "application/pdf"))]
        assert (await s.client.post(url, data={"content": "see"}, files=files)).status_code == 200
        assert (await s.client.post(url, data={"content": "again"}, files=files)).status_code == 200
        sha = (await s.client.get(url)).json()["messages"][0]["attachments"][0]["sha256"]
    folder = tmp_path / ".duragent" / "agents" / "bot" / "files" / sid
    copies = await asyncio.to_thread(lambda: sorted(folder.iterdir()))
    assert [p.name for p in copies] == [f"{sha[:8]}-Q3 report.pdf"]  # one copy for both
    assert await asyncio.to_thread(copies[0].read_bytes) == report
