"""An attachment going out: history's description and download path, and the bytes served."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from duragent.core.attachments import Attachment, AttachmentKind
from duragent.gateways.http.api.attachments import attachment_url, safe_filename
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import Served, served

PROBLEM = "application/problem+json"
PAGE = b"<html><script>alert(document.cookie)</script></html>"
SHA = hashlib.sha256(PAGE).hexdigest()


def kept(
    name: str | None, mime: str = "text/html", kind: AttachmentKind = AttachmentKind.DOCUMENT
) -> Attachment:
    return Attachment(kind=kind, mime=mime, size=len(PAGE), sha256=SHA, name=name)


async def send_page(s: Served, name: str | None) -> str:
    made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
    sid: str = made.json()["session_id"]
    s.server.enqueue(Reply(text="ok"))
    item = {"mime": "text/html", "data": base64.b64encode(PAGE).decode(), "name": name}
    sent = await s.client.post(
        f"/api/v1/sessions/{sid}/messages", json={"content": "x", "attachments": [item]}
    )
    assert sent.status_code == 200, sent.text
    return sid


async def test_a_download_is_always_a_sandboxed_attachment_never_a_page(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await send_page(s, 'evil"\r\nSet-Cookie: x=1;.html')
        got = await s.client.get(attachment_url(sid, SHA))
    assert got.status_code == 200
    assert got.content == PAGE
    assert got.headers["content-type"].startswith("text/html")
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-security-policy"] == "sandbox; default-src 'none'"
    assert got.headers["content-disposition"] == (
        'attachment; filename="evilSet-Cookie_ x=1_.html"; '
        "filename*=UTF-8''evilSet-Cookie%3A%20x%3D1%3B.html"
    )
    assert "set-cookie" not in got.headers


async def test_an_unknown_malformed_or_unrecorded_hash_is_a_404_problem(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await send_page(s, "page.html")
        other: str = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()[
            "session_id"
        ]
        for path in (
            attachment_url(sid, "0" * 64),  # never sent
            attachment_url(sid, "../../../etc/passwd"),
            attachment_url(sid, SHA.upper()),
            attachment_url(other, SHA),  # another session's
            attachment_url("session_01HZZZZZZZZZZZZZZZZZZZZZZZ", SHA),
        ):
            got = await s.client.get(path)
            assert got.status_code == 404, path
            assert got.headers["content-type"] == PROBLEM
        assert (await s.client.get(attachment_url(sid, SHA))).status_code == 200


@pytest.mark.parametrize(
    ("attachment", "expected"),
    [
        (kept("report.pdf"), "attachment; filename=\"report.pdf\"; filename*=UTF-8''report.pdf"),
        (
            kept("Grüße €.txt"),
            'attachment; filename="Gr__e _.txt"; '
            "filename*=UTF-8''Gr%C3%BC%C3%9Fe%20%E2%82%AC.txt",
        ),
        (
            kept('a"b\\c/d\r\n.txt'),
            "attachment; filename=\"abcd.txt\"; filename*=UTF-8''abcd.txt",
        ),
        (
            kept(None, "image/png", AttachmentKind.IMAGE),
            f"attachment; filename=\"image-{SHA[:12]}.png\"; filename*=UTF-8''image-{SHA[:12]}.png",
        ),
        (kept(" .. "), f"attachment; filename=\"{SHA[:12]}\"; filename*=UTF-8''{SHA[:12]}"),
    ],
)
def test_the_file_name_in_the_header_is_safe_and_keeps_the_original_in_utf8(
    attachment: Attachment, expected: str
) -> None:
    assert safe_filename(attachment) == expected
