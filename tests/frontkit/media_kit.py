"""What the media tests of every front end share: real images, and the session read from disk.

Each gateway's media tests (Telegram, Discord, an external plugin) send real bytes through the
platform's fake and check what ``duragent serve`` left in the workspace: the stored
``user_message`` events and their attachments, the content-addressed blobs, and the chat's
files folder in the agent's folder.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from duragent.frontkit import Fetched, MediaRef, MediaTooLargeError, MediaUnavailableError


def png(width: int = 64, height: int = 48, colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real PNG image of that size."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "PNG")
    return out.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Stored:
    """One recorded ``user_message``, with the session it is in."""

    session_id: str
    event: dict[str, Any]

    @property
    def content(self) -> str:
        return str(self.event["content"])

    @property
    def attachments(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.event.get("attachments", [])
        return found


def stored_messages(workspace: Path) -> list[Stored]:
    """Every ``user_message`` event of every session under ``workspace`` (``.duragent``)."""
    found: list[Stored] = []
    for log in sorted((workspace / "sessions").glob("*/events.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "user_message":
                found.append(Stored(log.parent.name, event))
    return found


def blob(workspace: Path, session_id: str, digest: str) -> bytes:
    """The stored bytes of one attachment (``FileNotFoundError`` when there are none)."""
    return (workspace / "sessions" / session_id / "attachments" / digest).read_bytes()


def chat_files(workspace: Path, agent: str = "bot") -> dict[str, bytes]:
    """The agent's received files, by path under its folder (``files/<session>/<name>``)."""
    folder = workspace / "agents" / agent
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted((folder / "files").rglob("*"))
        if p.is_file()
    }


class MemorySource:
    """A ``MediaSource`` over files in memory, counting each download (by ``platform_id``)."""

    def __init__(self, files: dict[str, bytes] | None = None) -> None:
        self.files: dict[str, bytes] = dict(files or {})
        self.fetched: list[str] = []
        self.failures: list[MediaUnavailableError | MediaTooLargeError] = []
        """Raised by the next fetches, in order, before any succeeds."""

    async def fetch(self, ref: MediaRef, max_bytes: int) -> Fetched:
        if self.failures:
            raise self.failures.pop(0)
        data = self.files.get(ref.platform_id)
        if data is None:
            raise MediaUnavailableError("no such file")
        self.fetched.append(ref.platform_id)
        return Fetched(data)
