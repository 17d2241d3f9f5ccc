"""A message's attachments over the HTTP API: JSON base64 or a multipart form, kept, limited."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import httpx

from duragent.core.attachments import AttachmentKind
from duragent.gateways.http.server.media_limits import (
    DEFAULT_LIMITS,
    MAX_ATTACHMENTS,
    MAX_BODY_BYTES,
)
from duragent.testing import Reply
from tests.gateways.http.api.test_stream import read_events
from tests.gateways.http.api_fixtures import Served, served

PROBLEM = "application/problem+json"
PNG = bytes.fromhex("89504e470d0a1a0a") + os.urandom(300)
PDF = b"%PDF-1.4\r\n--boundary-like\r\n\r\n" + os.urandom(2000) + b"\r\n"
MIB = 1024 * 1024


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def new_session(s: Served) -> str:
    made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
    session_id: str = made.json()["session_id"]
    return session_id


async def history(s: Served, sid: str) -> list[dict[str, Any]]:
    answer = await s.client.get(f"/api/v1/sessions/{sid}/messages")
    messages: list[dict[str, Any]] = answer.json()["messages"]
    return messages


def stored(s: Served, sid: str) -> list[str]:
    """The blobs on disk in the session's folder (file store)."""
    folder = s.root / ".duragent" / "sessions" / sid / "attachments"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


async def test_json_attachments_are_recorded_with_the_message_and_download_byte_for_byte(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="nice picture"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            json={
                "content": "look",
                "attachments": [
                    {"name": "cat.png", "mime": "image/png", "data": b64(PNG)},
                    # `base64 FILE` ends with a line break: taken
                    {"name": "../../etc/report.pdf", "data": b64(PDF) + "\n"},
                ],
            },
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["content"] == "nice picture"
        user = (await history(s, sid))[0]
        png_hash, pdf_hash = hashlib.sha256(PNG).hexdigest(), hashlib.sha256(PDF).hexdigest()
        assert user["content"] == "look"
        assert user["attachments"] == [
            {
                "kind": "image",
                "mime": "image/png",
                "size": len(PNG),
                "sha256": png_hash,
                "name": "cat.png",
                "url": f"/api/v1/sessions/{sid}/attachments/{png_hash}",
            },
            {
                "kind": "document",
                "mime": "application/pdf",  # guessed from the name
                "size": len(PDF),
                "sha256": pdf_hash,
                "name": "report.pdf",  # folders stripped
                "url": f"/api/v1/sessions/{sid}/attachments/{pdf_hash}",
            },
        ]
        for item, data in zip(user["attachments"], (PNG, PDF), strict=True):
            got = await s.client.get(item["url"])
            assert got.status_code == 200
            assert got.content == data
            assert got.headers["content-type"] == item["mime"]


async def test_a_multipart_form_is_a_message_with_files_recorded_byte_for_byte(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="got both"))
        voice = b"OggS" + os.urandom(1500)
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            data={"content": "héllo with files"},
            files=[
                ("file", ("notes.pdf", PDF, "application/pdf")),
                ("voice", ("note.ogg", voice, "audio/ogg")),
            ],
        )
        assert sent.status_code == 200, sent.text
        user = (await history(s, sid))[0]
        assert user["content"] == "héllo with files"
        shown = [(a["kind"], a["name"], a["mime"], a["size"]) for a in user["attachments"]]
        assert shown == [
            ("document", "notes.pdf", "application/pdf", len(PDF)),
            ("voice", "note.ogg", "audio/ogg", len(voice)),
        ]
        for item, data in zip(user["attachments"], (PDF, voice), strict=True):
            assert (await s.client.get(item["url"])).content == data


async def test_a_message_of_only_files_is_recorded_with_no_text(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="a photo!"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages", files=[("photo", ("p.png", PNG, "image/png"))]
        )
        assert sent.status_code == 200, sent.text
        user = (await history(s, sid))[0]
        assert (user["content"], [a["kind"] for a in user["attachments"]]) == ("", ["image"])


async def test_an_attachment_over_its_kinds_limit_is_a_413_and_nothing_is_kept(
    tmp_path: Path,
) -> None:
    big = os.urandom(DEFAULT_LIMITS.of_kind(AttachmentKind.IMAGE) + 1)
    async with served(tmp_path) as s:
        sid = await new_session(s)
        as_json = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            json={
                "content": "two",
                "attachments": [
                    {"name": "ok.pdf", "data": b64(PDF)},
                    {"name": "huge.png", "data": b64(big)},
                ],
            },
        )
        as_form = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            data={"content": "two"},
            files=[("a", ("ok.pdf", PDF, None)), ("b", ("huge.png", big, "image/png"))],
        )
        for refused in (as_json, as_form):
            assert refused.status_code == 413, refused.text
            assert refused.headers["content-type"] == PROBLEM
            assert refused.json()["field"] == "attachments[1]"
            assert "huge.png (image)" in refused.json()["detail"]
            assert "(image: 10.0 MiB)" in refused.json()["detail"]
        assert await history(s, sid) == []
        assert stored(s, sid) == []


async def test_base64_that_is_not_is_a_400_naming_the_field_and_the_fix(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        for data in ("not base64!", "QUJD\nREVG", "QUJDRA", "\n", "QUJD\n\n"):
            refused = await s.client.post(
                f"/api/v1/sessions/{sid}/messages",
                json={"content": "x", "attachments": [{"name": "a.txt", "data": data}]},
            )
            assert refused.status_code == 400, (data, refused.text)
            body = refused.json()
            assert body["field"] == "attachments[0].data"
            assert "base64 -w0" in body["fix"]
            assert body["detail"].startswith("attachments[0].data: this is not standard base64")
        assert await history(s, sid) == []
        assert stored(s, sid) == []


async def test_more_attachments_than_a_message_may_carry_is_a_400(tmp_path: Path) -> None:
    many = [{"name": f"{i}.txt", "data": b64(b"x")} for i in range(MAX_ATTACHMENTS + 1)]
    async with served(tmp_path) as s:
        sid = await new_session(s)
        refused = await s.client.post(
            f"/api/v1/sessions/{sid}/messages", json={"content": "x", "attachments": many}
        )
        assert refused.status_code == 400
        assert refused.json()["field"] == "attachments"
        assert stored(s, sid) == []


async def test_a_bad_mime_or_a_missing_text_is_a_400(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        bad_mime = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            json={"content": "x", "attachments": [{"mime": "png", "data": b64(PNG)}]},
        )
        assert bad_mime.status_code == 400
        assert bad_mime.json()["field"] == "attachments[0].mime"
        no_text = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"attachments": []})
        assert no_text.status_code == 400
        assert "content" in no_text.json()["detail"]
        assert await history(s, sid) == []


async def test_a_message_route_takes_a_body_past_2_mib_up_to_its_own_limit(
    tmp_path: Path,
) -> None:
    photo = os.urandom(3 * MIB)  # 4 MiB of base64: over the 2 MiB of other routes
    async with served(tmp_path) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="big one"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            json={"content": "x", "attachments": [{"mime": "image/jpeg", "data": b64(photo)}]},
        )
        assert sent.status_code == 200, sent.text
        url = (await history(s, sid))[0]["attachments"][0]["url"]
        assert (await s.client.get(url)).content == photo
        padding = "x" * (MAX_BODY_BYTES + 10)
        other = await s.client.post("/api/v1/sessions", json={"agent": "bot", "pad": padding})
        assert other.status_code == 413
        huge = b'{"content": "' + b"x" * (DEFAULT_LIMITS.body + 10) + b'"}'
        too_big = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            content=huge,
            headers={"content-type": "application/json"},
        )
        assert too_big.status_code == 413
        assert too_big.json()["limit"] == DEFAULT_LIMITS.body


async def test_a_message_sent_again_with_its_key_keeps_one_message_and_one_copy(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="once"))
        body = {"content": "x", "attachments": [{"name": "a.pdf", "data": b64(PDF)}]}
        key = {"Idempotency-Key": "upload-1"}
        url = f"/api/v1/sessions/{sid}/messages"
        first = await s.client.post(url, json=body, headers=key)
        again = await s.client.post(url, json=body, headers=key)
        assert first.status_code == 200
        assert again.json() == {"status": "duplicate", "session_id": sid}
        assert [m["role"] for m in await history(s, sid)] == ["user", "assistant"]
        assert stored(s, sid) == [hashlib.sha256(PDF).hexdigest()]


async def test_a_message_to_no_session_keeps_nothing_and_is_a_404(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        refused = await s.client.post(
            "/api/v1/sessions/session_01HZZZZZZZZZZZZZZZZZZZZZZZ/messages",
            json={"content": "x", "attachments": [{"data": b64(PDF)}]},
        )
        assert refused.status_code == 404
        assert not (
            s.root / ".duragent" / "sessions" / "session_01HZZZZZZZZZZZZZZZZZZZZZZZ"
        ).exists()


async def test_the_streams_start_event_lists_the_messages_attachments(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="streamed"))
        async with s.client.stream(
            "POST",
            f"/api/v1/sessions/{sid}/stream",
            data={"content": "see"},
            files=[("f", ("cat.png", PNG, "image/png"))],
        ) as response:
            assert response.status_code == 200
            events = await read_events(response)
        start = events[0][2]
        assert events[0][1] == "start"
        assert start["attachments"] == (await history(s, sid))[0]["attachments"]
        assert [a["name"] for a in start["attachments"]] == ["cat.png"]
        plain = await s.client.post(f"/api/v1/sessions/{sid}/stream", json={"content": "text"})
        assert "attachments" not in json.loads(plain.text.split("data: ", 1)[1].split("\n")[0])


async def test_without_a_token_a_form_is_taken_only_where_a_message_goes(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await new_session(s)
        form = {"files": [("f", ("a.txt", b"hi", "text/plain"))], "data": {"agent": "bot"}}
        refused = await s.client.post("/api/v1/sessions", **form)  # type: ignore[arg-type]
        assert refused.status_code == 415
        other = await s.client.post(
            f"/api/v1/sessions/{sid}/messages",
            content=b"hello",
            headers={"content-type": "text/plain"},
        )
        assert other.status_code == 415
        assert "application/json or multipart/form-data" in other.json()["detail"]


async def test_with_a_token_an_upload_needs_it(tmp_path: Path) -> None:
    token = "upload-secret"
    async with served(tmp_path, token=token, server_yaml=f"  api_token: {token}\n") as s:
        sid = await new_session(s)
        s.server.enqueue(Reply(text="ok"))
        sent = await s.client.post(
            f"/api/v1/sessions/{sid}/messages", files=[("f", ("a.pdf", PDF, None))]
        )
        assert sent.status_code == 200
        url = (await history(s, sid))[0]["attachments"][0]["url"]
        async with httpx.AsyncClient(base_url=str(s.client.base_url)) as anonymous:
            assert (await anonymous.get(url)).status_code == 401
            refused = await anonymous.post(
                f"/api/v1/sessions/{sid}/messages", files=[("f", ("b.pdf", b"x", None))]
            )
            assert refused.status_code == 401
        assert len(stored(s, sid)) == 1
