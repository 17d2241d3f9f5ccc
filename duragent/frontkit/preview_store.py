"""``PreviewStore``: which previews are in chats, on disk, so a crash never leaves one half.

A reply streamed into a chat is a message edited as the reply is written (``preview``). A
process killed while it streams leaves that message in the chat with half the reply. After
the restart the reply is delivered (it was written) or its turn runs again (it was not), and
without a trace of the preview the chat would end with the half preview *and* a second
message. So a preview's id is recorded here, durably, before its first edit, and removed once
the reply is final in its place; recovery (``recovery.recover_chats``) finds what is left and
edits the preview into the reply, or deletes it when the turn runs again.

One small JSON file per preview in the workspace's ``.duragent/previews/`` (front ends write
into a session's store only through ``TurnRunner``; this is the chat's state, not the
conversation's), written all or nothing (``atomic_write``) and removed with the folder
fsync'd: a removal lost in a crash after the reply's delivery was recorded would have the next
start delete the delivered reply. A record is written as soon as the preview's id is known,
on the event loop and without fsync (``save``: a process kill loses nothing the kernel holds),
then made durable on a thread: the month of strangers (issue 40) found one kill leaving
three and four previews nobody knew of while their records waited for threads and fsyncs.
A record whose rename a crash cut (``atomic_write``'s temporary file, whole) is read as the
record it is, and renamed into place; one that does not read is a machine crash's half
write, and is removed. Only a crash between the platform accepting the preview and that
write (the answer's last bytes) leaves a preview nothing knows of, as a crash between a send
and its ``delivery`` record leaves a reply sent twice.

With several nodes (``store.backend: postgres``) the node that finishes a chat after a kill
may not be the one that streamed into it: the records are rows every node sees
(``SharedPreviewStore`` over the cluster's ``PreviewRows``), each saved in one short
transaction on a thread of its own before the preview's first edit. Records left in the
workspace's folder from before the switch to PostgreSQL are still read, and removed when
their preview is finished. Never both for one preview: a file beside a row would be found
by its node's restart after another node had finished the preview, and delete the reply.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from duragent.frontkit.outbound import ChatRef, SentMessage
from duragent.store.atomic import atomic_write
from duragent.store.cluster_protocols import PreviewRows
from duragent.store.fileops import OS_FILE_OPS

__all__ = [
    "PreviewRecord",
    "PreviewRecords",
    "PreviewStore",
    "SharedPreviewStore",
    "preview_records",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PreviewRecord:
    """A preview message in a chat, for the session whose reply it shows."""

    session_id: str
    message: SentMessage

    def to_json(self) -> dict[str, str]:
        """What the file holds."""
        chat = self.message.chat
        return {
            "session_id": self.session_id,
            "gateway": chat.gateway,
            "chat_id": chat.chat_id,
            "message_id": self.message.message_id,
        }

    @classmethod
    def of(cls, data: object) -> PreviewRecord:
        """Read a file's JSON (``ValueError``/``KeyError``/``TypeError`` when it is not one)."""
        if not isinstance(data, dict):
            raise TypeError("a preview record is a JSON object")
        chat = ChatRef(str(data["gateway"]), str(data["chat_id"]))
        return cls(str(data["session_id"]), SentMessage(chat, str(data["message_id"])))

    @property
    def order(self) -> tuple[int, str]:
        """Sorts a session's previews oldest first (platform ids grow with time)."""
        mid = self.message.message_id
        return (int(mid), mid) if mid.isdigit() else (0, mid)


class PreviewRecords(Protocol):
    """Where a gateway's preview records are kept: files (one node) or rows (several)."""

    async def save(self, record: PreviewRecord) -> None:
        """Record a preview before its first edit."""

    async def drop(self, record: PreviewRecord) -> None:
        """Forget a preview (its reply is final, or it was deleted), durably."""

    def load(self, gateway: str) -> list[PreviewRecord]:
        """Every preview recorded in ``gateway``'s chats (blocking: call it on a thread)."""
        ...


class PreviewStore:
    """The preview records of a workspace, as files (see module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _file(self, record: PreviewRecord) -> Path:
        chat = record.message.chat
        key = "\0".join((record.session_id, chat.target, record.message.message_id))
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    async def save(self, record: PreviewRecord) -> None:
        """Record a preview (before its first edit): at once, then durably.

        The file is in place before this coroutine first waits, written without fsync on
        the event loop (a small file: tens of microseconds). A process killed from then on
        leaves the record, since a kill loses nothing the kernel holds; only a machine
        that loses power needs the fsyncs, which follow on a thread. Written through a
        thread first, the record waited behind the other saves of a burst of previews, and
        one kill in that wait left three previews nobody knew of (the month of strangers).
        """
        path = self._file(record)
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(record.to_json()).encode(), durable=False)
        await asyncio.to_thread(self._make_durable, path)

    def _make_durable(self, path: Path) -> None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # dropped meanwhile: its reply was final at once
            return
        try:
            OS_FILE_OPS.fsync(fd)
        finally:
            os.close(fd)
        OS_FILE_OPS.fsync_dir(self.folder)

    async def drop(self, record: PreviewRecord) -> None:
        """Forget a preview (its reply is final, or it was deleted), durably."""
        await asyncio.to_thread(self._remove, record)

    def _remove(self, record: PreviewRecord) -> None:
        path = self._file(record)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        OS_FILE_OPS.fsync_dir(self.folder)

    def load(self, gateway: str) -> list[PreviewRecord]:
        """Every preview recorded in ``gateway``'s chats (files that do not read are skipped).

        A file that does not read cannot be a preview's: ``atomic_write`` never leaves one
        half written. Such a file (copied in by hand, say) is logged and left alone. A record
        a kill left unrenamed is read too (module docstring).
        """
        found: list[PreviewRecord] = []
        try:
            self._promote_unrenamed()
            paths = sorted(self.folder.glob("*.json"))
        except OSError:
            return found
        for path in paths:
            try:
                record = PreviewRecord.of(json.loads(path.read_text(encoding="utf-8")))
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("preview record %s does not read (%s); left alone", path, exc)
                continue
            if record.message.chat.gateway == gateway:
                found.append(record)
        return found

    def _promote_unrenamed(self) -> None:
        """Rename into place each complete record a kill left as a temporary file.

        A temporary file that does not read is removed. ``OSError``: the folder cannot be
        listed (``load`` then finds nothing, as for a missing folder).
        """
        promoted = False
        for tmp in sorted(self.folder.glob("*.json.*.tmp")):
            final = tmp.with_name(tmp.name.split(".json.", 1)[0] + ".json")
            try:
                PreviewRecord.of(json.loads(tmp.read_text(encoding="utf-8")))
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError):
                log.info("preview record %s was never finished; removed", tmp.name)
                tmp.unlink(missing_ok=True)
                continue
            if final.exists():  # written again since: the temporary copy is a leftover
                tmp.unlink(missing_ok=True)
                continue
            log.info("preview record %s: a kill cut its rename; read as %s", tmp.name, final.name)
            tmp.replace(final)
            promoted = True
        if promoted:
            OS_FILE_OPS.fsync_dir(self.folder)


class SharedPreviewStore:
    """The preview records every node sees (``PreviewRows``), and the folder's old ones."""

    def __init__(self, rows: PreviewRows, folder: Path) -> None:
        self.rows = rows
        self.files = PreviewStore(folder)
        """Records from before the workspace moved to a shared store: read, then removed."""
        self._threads = ThreadPoolExecutor(1, thread_name_prefix="preview-records")
        """Its own thread: a save never waits behind the process's other threaded work."""

    async def save(self, record: PreviewRecord) -> None:
        """Record a preview before its first edit: committed when this returns."""
        chat = record.message.chat
        args = (chat.gateway, chat.chat_id, record.message.message_id, record.session_id)
        await asyncio.get_running_loop().run_in_executor(self._threads, self.rows.save, *args)

    async def drop(self, record: PreviewRecord) -> None:
        """Forget a preview, as a row and as an old file."""
        chat = record.message.chat
        args = (chat.gateway, chat.chat_id, record.message.message_id)
        await asyncio.get_running_loop().run_in_executor(self._threads, self.rows.drop, *args)
        await self.files.drop(record)

    def load(self, gateway: str) -> list[PreviewRecord]:
        """Every preview recorded in ``gateway``'s chats, by any node (files included)."""
        rows = [
            PreviewRecord(session, SentMessage(ChatRef(gateway, chat), message))
            for chat, message, session in self.rows.load(gateway)
        ]
        seen = {(r.message.chat.chat_id, r.message.message_id) for r in rows}
        old = [
            r
            for r in self.files.load(gateway)
            if (r.message.chat.chat_id, r.message.message_id) not in seen
        ]
        return rows + old


def preview_records(workspace: Path, shared: PreviewRows | None) -> PreviewRecords:
    """Files in the workspace's ``previews`` folder, or ``shared`` rows (and old files)."""
    folder = workspace / "previews"
    return PreviewStore(folder) if shared is None else SharedPreviewStore(shared, folder)
