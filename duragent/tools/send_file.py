"""The ``send_file`` tool: a file from the agent's folder or the web, sent with the reply.

People expect a bot to send back the chart or the document it made. The tool does not send
anything itself: it keeps the bytes in the session's attachments (content-addressed, fsync'd)
and hands them to the turn (``ReplyFiles``); the turn's final reply records them in its
``assistant_response`` event (``ReplyFile`` records), and the front end delivers reply and
files together, once (``frontkit.delivery``). So a file is as durable as the reply it goes
with: a crash after the reply is written sends both after the restart, and a delivered reply
is never sent again.

Where a file may come from:

- ``path``: inside the agent's folder (relative to it, the tools' working directory, or
  absolute), resolved with every symbolic link followed and refused when it leads outside,
  to a folder, to another chat's ``files/<session>/`` folder, or to the secrets a sandbox
  covers (``policy.yaml``, ``policy.local.yaml``, ``.env``); a path with ``..`` is refused
  before anything is looked up.
- ``url``: fetched as the ``web`` tool fetches (http and https only, public addresses unless
  the agent's ``web`` entry has ``allow_private``, checked on every redirect: ``web_guard``),
  within ``FETCH_TIMEOUT`` and the size limit.

At most ``MAX_FILE_BYTES`` (50 MB, Telegram's limit for a file a bot uploads); an image over
``MAX_PHOTO_BYTES`` (10 MB, Telegram's limit for a photo) goes as a document. ``kind``
(photo, document, voice, audio, video) is chosen from the file's type when not given; a
platform that refuses a kind gets the file another way or the chat is told (the gateways).
At most ``MAX_FILES_PER_REPLY`` files go with one reply. The policy sees ``send_file:<path>``
or ``send_file:<url>`` (``builtin:send_file:http*`` denies every download, say).
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import httpx

from duragent.agents.chat_files import FILES_FOLDER
from duragent.agents.protected import SECRET_FILES
from duragent.core.attachments import Attachment, AttachmentKind, attachments_of
from duragent.core.messages import ToolDefinition
from duragent.core.net_rules import AllowRule, parse_allow_rule
from duragent.tools._args import str_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.tools.web_body import ACCEPT_ENCODING, BodyError, read_body
from duragent.tools.web_guard import ForbiddenAddress, GuardedTransport

__all__ = [
    "KINDS",
    "MAX_CAPTION_CHARS",
    "MAX_FILES_PER_REPLY",
    "MAX_FILE_BYTES",
    "MAX_PHOTO_BYTES",
    "ReplyFile",
    "ReplyFiles",
    "SendFileTool",
    "file_kind",
]

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Telegram's limit for a file a bot sends (Discord's is lower: it refuses, the chat is told)."""
MAX_PHOTO_BYTES = 10 * 1024 * 1024
"""Telegram's limit for a photo; a larger image is sent as a document."""
MAX_CAPTION_CHARS = 1024
"""Telegram's limit for a caption (longer text belongs in the reply)."""
MAX_FILES_PER_REPLY = 10
FETCH_TIMEOUT = 60.0
KINDS: Mapping[str, AttachmentKind] = {
    "photo": AttachmentKind.IMAGE,
    "document": AttachmentKind.DOCUMENT,
    "voice": AttachmentKind.VOICE,
    "audio": AttachmentKind.AUDIO,
    "video": AttachmentKind.VIDEO,
}
"""The tool's ``kind`` names (the platforms' words) → the attachment's kind."""
_WORDS = {kind: word for word, kind in KINDS.items()}
_PHOTO_TYPES = frozenset({"image/jpeg", "image/png", "image/webp"})
_VOICE_TYPES = frozenset({"audio/ogg", "audio/opus"})
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"OggS", "audio/ogg"),
)
_USER_AGENT = "duragent-send-file/1"
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f/\\]+")
"""What a file name taken from a URL may not hold (separators, control characters)."""


@dataclass(frozen=True, slots=True)
class ReplyFile:
    """A file a reply carries: the stored attachment and the caption it goes out with."""

    attachment: Attachment
    caption: str | None = None

    @property
    def file_name(self) -> str:
        """The name the chat shows (the attachment's, else its kind with an extension)."""
        if self.attachment.name:
            return self.attachment.name
        extension = mimetypes.guess_extension(self.attachment.mime) or ""
        return f"{_WORDS[self.attachment.kind]}{extension}"

    def to_data(self) -> dict[str, Any]:
        """The record in the reply's ``assistant_response`` (the attachment's, plus caption)."""
        data = self.attachment.to_data()
        if self.caption:
            data["caption"] = self.caption
        return data

    @classmethod
    def files_of(cls, records: object) -> tuple[ReplyFile, ...]:
        """The files a stored reply lists, skipping each record that is not one."""
        if not isinstance(records, Sequence) or isinstance(records, str | bytes):
            return ()
        found: list[ReplyFile] = []
        for record in records:
            if isinstance(record, Mapping):
                caption = record.get("caption")
                found.extend(
                    cls(attachment, caption if isinstance(caption, str) else None)
                    for attachment in attachments_of([record])
                )
        return tuple(found)


class ReplyFiles(Protocol):
    """Port: one session's files waiting for its next reply (the turn implements it)."""

    async def attach(
        self, data: bytes, *, kind: AttachmentKind, mime: str, name: str, caption: str | None
    ) -> ReplyFile | None:
        """Keep ``data`` durably and attach it to the reply; None when it is attached already."""
        ...

    def waiting(self) -> int:
        """How many files wait for the reply."""
        ...

    def take(self) -> tuple[ReplyFile, ...]:
        """The waiting files, now the reply's (none wait afterwards)."""
        ...


def file_kind(mime: str, size: int) -> AttachmentKind:
    """The kind a file goes out as when the model did not say: by its type and size."""
    if mime in _PHOTO_TYPES and size <= MAX_PHOTO_BYTES:
        return AttachmentKind.IMAGE
    if mime in _VOICE_TYPES:
        return AttachmentKind.VOICE
    if mime.startswith("audio/"):
        return AttachmentKind.AUDIO
    if mime.startswith("video/"):
        return AttachmentKind.VIDEO
    return AttachmentKind.DOCUMENT


def _mime(name: str, data: bytes, given: str | None = None) -> str:
    """The file's type: the one given (an HTTP header), else by its name, else by its bytes."""
    if given and given not in ("application/octet-stream", "binary/octet-stream"):
        return given
    guessed = mimetypes.guess_type(name, strict=False)[0]
    if guessed:
        return guessed
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((t for magic, t in _MAGIC if data.startswith(magic)), "application/octet-stream")


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{max(1, n // 1024)} KB"


class _NotSendable(Exception):
    """Why a file cannot be sent, in words for the model."""


def _in_folder(agent_dir: Path, session_id: str, given: str) -> Path:
    """The file ``given`` names inside ``agent_dir``, links followed (``_NotSendable`` if not)."""
    if "\x00" in given:
        raise _NotSendable("the path contains a NUL character")
    if ".." in PurePosixPath(given.replace("\\", "/")).parts:
        raise _NotSendable(f"{given}: '..' is not allowed; give a path inside the agent's folder")
    root = agent_dir.resolve()
    try:
        path = (root / os.path.expanduser(given)).resolve(strict=True)
    except FileNotFoundError:
        raise _NotSendable(f"{given} does not exist in the agent's folder") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop
        raise _NotSendable(f"{given} cannot be opened: {exc}") from None
    if not path.is_relative_to(root):
        raise _NotSendable(f"{given} is outside the agent's folder (links are followed)")
    parts = path.relative_to(root).parts
    if not parts or not path.is_file():
        raise _NotSendable(f"{given} is not a file")
    if parts[0] in SECRET_FILES or parts[-1] == ".env":
        raise _NotSendable(f"{given} holds the agent's policy or secrets; it is never sent")
    if parts[0] == FILES_FOLDER and (len(parts) < 3 or parts[1] != session_id):
        raise _NotSendable(f"{given} is in another chat's files; only this chat's may be sent")
    return path


def _read_file(path: Path, limit: int) -> bytes:
    """The file's bytes (at most ``limit``: ``_NotSendable`` beyond), never through a new link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise _NotSendable(f"{path.name} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _NotSendable(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise _NotSendable(f"{path.name} is {_size(info.st_size)}; at most {_size(limit)}")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise _NotSendable(f"{path.name} is larger than {_size(limit)}")
    return data


class SendFileTool:
    """Attaches a file to the turn's reply (see module docstring).

    Args:
        files: the session's files waiting for the reply (``ReplyFiles``).
        allow_private: the agent's ``web`` entry's ``allow_private`` (what a URL may reach).
        max_bytes: the largest file sent.
        timeout: seconds a whole download may take.
    """

    name: str = "send_file"
    policy_type: PolicyType = "builtin"

    def __init__(
        self,
        files: ReplyFiles,
        *,
        allow_private: Sequence[str | AllowRule] = (),
        max_bytes: int = MAX_FILE_BYTES,
        timeout: float = FETCH_TIMEOUT,
    ) -> None:
        self._files = files
        self.allow_private = tuple(
            r if isinstance(r, AllowRule) else parse_allow_rule(r) for r in allow_private
        )
        self.max_bytes = max_bytes
        self.timeout = timeout

    def definition(self) -> ToolDefinition:
        """``path`` or ``url``, with an optional ``caption`` and ``kind``."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Send a file to the person with your reply: a `path` in your folder (such as "
                "a chart you made, or files/<session>/… they sent) or an http(s) `url`. It "
                f"goes out with your next reply (at most {MAX_FILES_PER_REPLY} files, "
                f"{_size(self.max_bytes)} each); `kind` is chosen from the file's type unless "
                "given."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file in the agent's folder."},
                    "url": {"type": "string", "description": "An http or https URL."},
                    "caption": {
                        "type": "string",
                        "description": f"Text shown with the file (at most {MAX_CAPTION_CHARS}).",
                    },
                    "kind": {"type": "string", "enum": list(KINDS)},
                },
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``send_file:<path>`` or ``send_file:<url>`` (what policy patterns match)."""
        where = str_arg(args, "path") or str_arg(args, "url") or ""
        return f"{self.name}:{where.strip()}" if where.strip() else self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Read or fetch the file, keep it, attach it; a refusal names its cause."""
        path, url = str_arg(args, "path"), str_arg(args, "url")
        caption = (str_arg(args, "caption") or "").strip() or None
        asked = (str_arg(args, "kind") or "").strip().lower() or None
        try:
            if (path is None) == (url is None):
                raise _NotSendable("give exactly one of `path` (a file in your folder) or `url`")
            if asked is not None and asked not in KINDS:
                raise _NotSendable(f"unknown kind {asked!r}; use one of {', '.join(KINDS)}")
            if caption is not None and len(caption) > MAX_CAPTION_CHARS:
                raise _NotSendable(
                    f"the caption has {len(caption)} characters; at most {MAX_CAPTION_CHARS} "
                    "(put longer text in your reply)"
                )
            if self._files.waiting() >= MAX_FILES_PER_REPLY:
                raise _NotSendable(f"at most {MAX_FILES_PER_REPLY} files go with one reply")
            if path is not None:
                found = _in_folder(ctx.agent_dir, ctx.session_id, path.strip())
                data = await asyncio.to_thread(_read_file, found, self.max_bytes)
                name, mime = found.name, _mime(found.name, data)
            else:
                assert url is not None
                data, name, given = await self._fetch(url.strip())
                mime = _mime(name, data, given)
        except _NotSendable as exc:
            return ToolOutcome(False, f"send_file: {exc}")
        if not data:
            return ToolOutcome(False, f"send_file: {name} is empty; platforms refuse empty files")
        return await self._attach(data, name, mime, caption, asked)

    async def _attach(
        self, data: bytes, name: str, mime: str, caption: str | None, asked: str | None
    ) -> ToolOutcome:
        kind = KINDS[asked] if asked is not None else file_kind(mime, len(data))
        note = ""
        if kind is AttachmentKind.IMAGE and (
            len(data) > MAX_PHOTO_BYTES or not mime.startswith("image/")
        ):
            kind, note = AttachmentKind.DOCUMENT, " (as a document: not a photo of at most 10 MB)"
        try:
            attached = await self._files.attach(
                data, kind=kind, mime=mime, name=name, caption=caption
            )
        except OSError as exc:
            return ToolOutcome(False, f"send_file: {name} could not be kept: {exc}")
        if attached is None:
            return ToolOutcome(True, f"{name} is attached to your reply already.")
        return ToolOutcome(
            True,
            f"{name} ({_WORDS[kind]}, {_size(len(data))}){note} will be sent to the chat with "
            "your reply.",
        )

    async def _fetch(self, url: str) -> tuple[bytes, str, str | None]:
        """The body, a name and the declared type of ``url`` (``_NotSendable`` on any failure)."""
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise _NotSendable(f"only http:// and https:// URLs can be fetched: {url}")
        try:
            async with asyncio.timeout(self.timeout):
                async with (
                    httpx.AsyncClient(
                        follow_redirects=True,
                        max_redirects=5,
                        timeout=self.timeout,
                        headers={"User-Agent": _USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING},
                        transport=GuardedTransport(self.allow_private),
                    ) as client,
                    client.stream("GET", url) as response,
                ):
                    if response.status_code >= 400:
                        raise _NotSendable(f"HTTP {response.status_code} from {response.url}")
                    read = await read_body(response, self.max_bytes)
                    given = response.headers.get("content-type", "").split(";")[0].strip()
                    final = response.url.path
        except (TimeoutError, httpx.TimeoutException):
            raise _NotSendable(f"fetching {url} took more than {self.timeout:g} s") from None
        except ForbiddenAddress as exc:
            raise _NotSendable(f"fetching {url} refused: {exc}") from None
        except BodyError as exc:
            raise _NotSendable(f"{url} cannot be read: {exc}") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise _NotSendable(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None
        if read.cut:
            raise _NotSendable(f"{url} is larger than {_size(self.max_bytes)}")
        name = _UNSAFE_NAME.sub("_", unquote(final.rsplit("/", 1)[-1])).strip() or "file"
        return read.data, name, given.lower() or None
