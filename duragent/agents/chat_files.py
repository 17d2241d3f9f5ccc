"""Where a chat's received files live: ``files/<session id>/`` in the agent's folder.

A document a person sends is saved where the agent's tools can read it (issue 36): in the
agent's folder, which tools already see (writable: it is their working directory), under
``files/``, which is never part of the agent's definition (``agents.protected`` lists no such
entry, and ``files`` is refused as a definition path). Each session has its own folder, and a
sandboxed tool sees only its own session's (``tools.sandbox``): one chat's files are not
another chat's to read.

A file's name there is derived from the attachment alone (its hash's first 8 digits and its
sanitised name), so the same file sent twice is one file, two files of one name never
overwrite each other, and the model can be told the path without a look at the disk.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path, PurePosixPath

from duragent.core.attachments import Attachment

__all__ = ["FILES_FOLDER", "chat_file", "chat_files_dir"]

FILES_FOLDER = "files"
"""The top-level entry of an agent's folder that holds received files (data, not definition)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")
_MAX_NAME = 80

_EXTENSIONS = {
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "application/json": ".json",
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/webp": ".webp",
    "image/gif": ".gif",
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "video/mp4": ".mp4",
}


def chat_files_dir(agent_dir: Path, session_id: str) -> Path:
    """The session's files folder (not created here)."""
    if not session_id or "/" in session_id or session_id in {".", ".."}:
        raise ValueError(f"not a session id: {session_id!r}")
    return agent_dir / FILES_FOLDER / session_id


@functools.lru_cache(maxsize=1024)
def chat_file(attachment: Attachment) -> PurePosixPath:
    """The attachment's path under the agent's folder's files folder's session folder.

    ``a1b2c3d4-report.pdf`` for a file named ``report.pdf``; ``a1b2c3d4.jpg`` for an unnamed
    photo. Path separators, control characters and leading dots are dropped from the name.
    Kept per attachment (a recent one's line names it at every request, and its copy is
    looked for by it).
    """
    prefix = attachment.sha256[:8]
    raw = (attachment.name or "").replace("\\", "/").rsplit("/", 1)[-1]
    safe = _UNSAFE.sub("_", raw).strip(" .")[-_MAX_NAME:]
    if not safe:
        return PurePosixPath(prefix + _EXTENSIONS.get(attachment.mime, ""))
    return PurePosixPath(f"{prefix}-{safe}")
