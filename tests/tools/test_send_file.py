"""``send_file``: what may be sent (the agent's folder, allowed URLs), as what, and its refusals."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.caller import OPERATOR
from duragent.testing._gateway_files import MediaFileServer
from duragent.tools.base import ToolContext, ToolOutcome
from duragent.tools.send_file import (
    MAX_FILES_PER_REPLY,
    MAX_PHOTO_BYTES,
    ReplyFile,
    SendFileTool,
    file_kind,
)
from tests.frontkit.media_kit import png

SESSION = "s1"
LOCAL = ["127.0.0.1"]
"""What lets a URL reach the test's file server (loopback is refused by default)."""
PHOTO = png(20, 10)


class Shelf:
    """The files a tool attached (the turn's ``ReplyFiles``, in memory)."""

    def __init__(self) -> None:
        self.files: list[ReplyFile] = []
        self.bytes: dict[str, bytes] = {}

    async def attach(
        self, data: bytes, *, kind: AttachmentKind, mime: str, name: str, caption: str | None
    ) -> ReplyFile | None:
        sha = content_hash(data)
        if any(f.attachment.sha256 == sha for f in self.files):
            return None
        attachment = Attachment(kind=kind, mime=mime, size=len(data), sha256=sha, name=name)
        self.bytes[sha] = data
        self.files.append(ReplyFile(attachment, caption))
        return self.files[-1]

    def waiting(self) -> int:
        return len(self.files)

    def take(self) -> tuple[ReplyFile, ...]:
        files, self.files = tuple(self.files), []
        return files


def context(agent_dir: Path) -> ToolContext:
    return ToolContext(
        caller=OPERATOR,
        session_id=SESSION,
        agent_name="bot",
        agent_dir=agent_dir,
        workspace_dir=agent_dir.parent,
        world_memory_dir=agent_dir.parent,
    )


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "agents" / "bot"
    folder.mkdir(parents=True)
    return folder


async def send(
    agent_dir: Path, args: Mapping[str, Any], **options: Any
) -> tuple[ToolOutcome, Shelf]:
    shelf = Shelf()
    outcome = await SendFileTool(shelf, **options).run(args, context(agent_dir))
    return outcome, shelf


async def test_a_chart_in_the_agents_folder_is_attached_as_a_photo_with_its_caption(
    agent_dir: Path,
) -> None:
    (agent_dir / "out").mkdir()
    (agent_dir / "out" / "chart.png").write_bytes(PHOTO)
    outcome, shelf = await send(agent_dir, {"path": "out/chart.png", "caption": "Sales"})
    assert outcome.success, outcome.content
    assert "chart.png (photo" in outcome.content
    assert "will be sent to the chat with your reply" in outcome.content
    [file] = shelf.files
    assert (file.attachment.kind, file.attachment.mime, file.caption) == (
        AttachmentKind.IMAGE,
        "image/png",
        "Sales",
    )
    assert (file.attachment.name, shelf.bytes[file.attachment.sha256]) == ("chart.png", PHOTO)


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("report.pdf", b"%PDF-1.4 a report", AttachmentKind.DOCUMENT),
        ("note.ogg", b"OggS a voice note", AttachmentKind.VOICE),
        ("song.mp3", b"ID3 a song", AttachmentKind.AUDIO),
        ("clip.mp4", b"\x00\x00\x00 ftyp a clip", AttachmentKind.VIDEO),
        ("notes.txt", b"plain words", AttachmentKind.DOCUMENT),
        ("no-extension", b"\x89PNG\r\n\x1a\n" + PHOTO[8:], AttachmentKind.IMAGE),
    ],
    ids=["pdf", "ogg", "mp3", "mp4", "txt", "png-bytes"],
)
async def test_the_kind_follows_the_files_type(
    agent_dir: Path, name: str, data: bytes, kind: AttachmentKind
) -> None:
    (agent_dir / name).write_bytes(data)
    outcome, shelf = await send(agent_dir, {"path": name})
    assert outcome.success, outcome.content
    assert shelf.files[0].attachment.kind is kind


async def test_a_kind_the_model_names_is_kept_and_an_unknown_one_refused(agent_dir: Path) -> None:
    (agent_dir / "chart.png").write_bytes(PHOTO)
    outcome, shelf = await send(agent_dir, {"path": "chart.png", "kind": "document"})
    assert outcome.success
    assert shelf.files[0].attachment.kind is AttachmentKind.DOCUMENT
    outcome, shelf = await send(agent_dir, {"path": "chart.png", "kind": "sticker"})
    assert not outcome.success
    assert "unknown kind 'sticker'" in outcome.content
    assert shelf.files == []


async def test_a_photo_that_is_no_image_goes_as_a_document(agent_dir: Path) -> None:
    (agent_dir / "data.csv").write_bytes(b"a,b\n1,2\n")
    outcome, shelf = await send(agent_dir, {"path": "data.csv", "kind": "photo"})
    assert outcome.success
    assert "as a document" in outcome.content
    assert shelf.files[0].attachment.kind is AttachmentKind.DOCUMENT


def test_an_image_over_telegrams_photo_limit_is_a_document() -> None:
    assert file_kind("image/png", MAX_PHOTO_BYTES) is AttachmentKind.IMAGE
    assert file_kind("image/png", MAX_PHOTO_BYTES + 1) is AttachmentKind.DOCUMENT
    assert file_kind("image/gif", 100) is AttachmentKind.DOCUMENT


async def test_this_chats_received_files_may_be_sent_and_another_chats_may_not(
    agent_dir: Path,
) -> None:
    for session in (SESSION, "other"):
        (agent_dir / "files" / session).mkdir(parents=True)
        (agent_dir / "files" / session / "a1b2c3d4-report.pdf").write_bytes(b"%PDF-1.4")
    outcome, _ = await send(agent_dir, {"path": f"files/{SESSION}/a1b2c3d4-report.pdf"})
    assert outcome.success, outcome.content
    outcome, shelf = await send(agent_dir, {"path": "files/other/a1b2c3d4-report.pdf"})
    assert not outcome.success
    assert "another chat's files" in outcome.content
    assert shelf.files == []


@pytest.mark.parametrize(
    "path",
    ["../secret.txt", "out/../../secret.txt", "..", "out/..\\..\\secret.txt"],
)
async def test_a_path_with_dot_dot_is_refused_before_anything_is_read(
    agent_dir: Path, path: str
) -> None:
    (agent_dir.parent / "secret.txt").write_text("the owner's")
    outcome, shelf = await send(agent_dir, {"path": path})
    assert not outcome.success
    assert "'..' is not allowed" in outcome.content
    assert shelf.files == []


async def test_an_absolute_path_outside_the_agents_folder_is_refused(
    agent_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("the owner's")
    (agent_dir / "mine.txt").write_text("mine")
    outcome, shelf = await send(agent_dir, {"path": str(outside)})
    assert not outcome.success
    assert "outside the agent's folder" in outcome.content
    assert shelf.files == []
    outcome, shelf = await send(agent_dir, {"path": str(agent_dir / "mine.txt")})
    assert outcome.success, outcome.content


async def test_a_symbolic_link_leading_out_of_the_agents_folder_is_refused(
    agent_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text("a private key")
    os.symlink(outside / "id_rsa", agent_dir / "key.txt")
    os.symlink(outside, agent_dir / "linked")
    for path in ("key.txt", "linked/id_rsa"):
        outcome, shelf = await send(agent_dir, {"path": path})
        assert not outcome.success, path
        assert "outside the agent's folder" in outcome.content
        assert shelf.files == []


async def test_a_symbolic_link_within_the_agents_folder_is_followed(agent_dir: Path) -> None:
    (agent_dir / "chart.png").write_bytes(PHOTO)
    os.symlink(agent_dir / "chart.png", agent_dir / "latest.png")
    outcome, shelf = await send(agent_dir, {"path": "latest.png"})
    assert outcome.success, outcome.content
    assert shelf.files[0].attachment.name == "chart.png"


@pytest.mark.parametrize("name", [".env", "policy.yaml", "policy.local.yaml", "tools/x/.env"])
async def test_the_agents_policy_and_secrets_are_never_sent(agent_dir: Path, name: str) -> None:
    (agent_dir / name).parent.mkdir(parents=True, exist_ok=True)
    (agent_dir / name).write_text("API_KEY=sk-secret\n")
    outcome, shelf = await send(agent_dir, {"path": name})
    assert not outcome.success
    assert "policy or secrets" in outcome.content
    assert shelf.files == []


async def test_missing_empty_and_folder_paths_are_refused_with_their_cause(
    agent_dir: Path,
) -> None:
    (agent_dir / "empty.txt").write_bytes(b"")
    (agent_dir / "out").mkdir()
    expected = {
        "nope.png": "does not exist",
        "empty.txt": "is empty",
        "out": "is not a file",
        ".": "is not a file",
    }
    for path, cause in expected.items():
        outcome, _ = await send(agent_dir, {"path": path})
        assert not outcome.success, path
        assert cause in outcome.content, outcome.content


async def test_a_file_over_the_limit_is_refused(agent_dir: Path) -> None:
    (agent_dir / "big.bin").write_bytes(bytes(2048))
    outcome, shelf = await send(agent_dir, {"path": "big.bin"}, max_bytes=1024)
    assert not outcome.success
    assert "at most 1 KB" in outcome.content
    assert shelf.files == []


async def test_arguments_that_do_not_say_one_file_are_refused(agent_dir: Path) -> None:
    (agent_dir / "a.txt").write_text("a")
    for args in ({}, {"path": "a.txt", "url": "https://example.com/a.txt"}):
        outcome, _ = await send(agent_dir, args)
        assert not outcome.success
        assert "exactly one of `path`" in outcome.content
    outcome, _ = await send(agent_dir, {"path": "a.txt", "caption": "x" * 1025})
    assert not outcome.success
    assert "at most 1024" in outcome.content


async def test_the_same_file_twice_is_attached_once_and_a_reply_takes_at_most_ten(
    agent_dir: Path,
) -> None:
    shelf = Shelf()
    tool = SendFileTool(shelf)
    ctx = context(agent_dir)
    (agent_dir / "a.txt").write_text("a")
    assert (await tool.run({"path": "a.txt"}, ctx)).success
    again = await tool.run({"path": "a.txt"}, ctx)
    assert again.success
    assert "attached to your reply already" in again.content
    for n in range(MAX_FILES_PER_REPLY - 1):
        (agent_dir / f"{n}.txt").write_text(str(n))
        assert (await tool.run({"path": f"{n}.txt"}, ctx)).success
    (agent_dir / "more.txt").write_text("more")
    refused = await tool.run({"path": "more.txt"}, ctx)
    assert not refused.success
    assert f"at most {MAX_FILES_PER_REPLY} files" in refused.content
    assert len(shelf.files) == MAX_FILES_PER_REPLY


async def test_a_url_is_fetched_only_where_the_web_tool_may_reach(agent_dir: Path) -> None:
    async with MediaFileServer() as files:
        url = files.add(PHOTO, "chart.png")
        refused, shelf = await send(agent_dir, {"url": url})
        assert not refused.success
        assert "refused" in refused.content
        assert shelf.files == []
        assert files.downloads(url) == 0
        outcome, shelf = await send(agent_dir, {"url": url}, allow_private=LOCAL)
    assert outcome.success, outcome.content
    [file] = shelf.files
    assert (file.attachment.name, file.attachment.mime) == ("chart.png", "image/png")
    assert file.attachment.kind is AttachmentKind.IMAGE
    assert shelf.bytes[file.attachment.sha256] == PHOTO


async def test_a_url_that_is_not_http_or_answers_an_error_is_refused(agent_dir: Path) -> None:
    outcome, _ = await send(agent_dir, {"url": "file:///etc/passwd"})
    assert not outcome.success
    assert "only http:// and https://" in outcome.content
    async with MediaFileServer() as files:
        url = files.add(PHOTO, "chart.png")
        files.fail_next(1, status=404)
        outcome, _ = await send(agent_dir, {"url": url}, allow_private=LOCAL)
        assert not outcome.success
        assert "HTTP 404" in outcome.content
        big = files.add(bytes(4096), "big.bin")
        outcome, _ = await send(agent_dir, {"url": big}, allow_private=LOCAL, max_bytes=1024)
    assert not outcome.success
    assert "larger than 1 KB" in outcome.content


def test_policy_sees_the_path_or_the_url() -> None:
    tool = SendFileTool(Shelf())
    assert tool.invocation({"path": "out/chart.png"}) == "send_file:out/chart.png"
    assert tool.invocation({"url": "https://x.test/a.pdf"}) == "send_file:https://x.test/a.pdf"
    assert tool.invocation({}) == "send_file"


def test_a_reply_file_reads_back_from_its_record_and_skips_a_damaged_one() -> None:
    attachment = Attachment(
        kind=AttachmentKind.IMAGE, mime="image/png", size=3, sha256="a" * 64, name="c.png"
    )
    file = ReplyFile(attachment, "Sales")
    records: list[Any] = [file.to_data(), {"kind": "nonsense"}, "not a record"]
    assert ReplyFile.files_of(records) == (file,)
    assert ReplyFile.files_of(None) == ()
    unnamed = ReplyFile(
        Attachment(kind=AttachmentKind.VOICE, mime="audio/ogg", size=1, sha256="b" * 64)
    )
    assert unnamed.file_name == "voice.oga"
