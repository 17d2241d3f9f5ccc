"""What ``GET /api/v1/sessions`` and ``duragent session list`` show: every session on disk.

Its own module because its rule is not the registry's: *nothing accepted disappears from
view*. A listing starts no actor: live sessions are described by their actor, the others by
their snapshot header. Each entry names the chat the session serves (``gateway``,
``gateway_chat_id`` and ``gateway_chat_type``, None for an HTTP or CLI session): the
``session`` tool shows a chat only its own sessions, and the web console lists each session
with the same front end and chat its page shows. A session the listing cannot describe is
still listed, with a ``status`` that is not a ``SessionStatus`` and a ``reason`` (fields
added to the usual entry, none renamed):

- ``quarantined``: its files could not be trusted; moved aside, with the reason recorded;
- ``unavailable``: the machine refuses to read its ``state.yaml`` (``StorageError``: EACCES,
  EIO, EMFILE — requests to it answer 503 until the cause is fixed), or the file is missing
  or not a snapshot (checked when the session is next used: rebuilt from its events, or
  quarantined).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from duragent.errors import StorageError
from duragent.session.actor import SessionInfo, SessionQuarantinedError
from duragent.store import STATE_FILENAME, LeaseHeldError, SessionStorage, SnapshotCorruptError

__all__ = ["QUARANTINED", "UNAVAILABLE", "SessionListing"]

QUARANTINED = "quarantined"
"""The ``status`` a listing gives a quarantined session (not a ``SessionStatus``: not loadable)."""
UNAVAILABLE = "unavailable"
"""The ``status`` of a session whose snapshot cannot be read now (see module docstring)."""

_UNCHECKED = "checked when the session is next used (rebuilt from its events or quarantined)"


class SessionListing:
    """Entries for every session of ``store``, newest first (see module docstring)."""

    def __init__(
        self,
        store: SessionStorage,
        *,
        is_live: Callable[[str], bool],
        info: Callable[[str], Awaitable[SessionInfo]],
    ) -> None:
        self._store = store
        self._is_live = is_live
        self._info = info

    async def sessions(self, limit: int) -> list[dict[str, Any]]:
        """Newest sessions first, at most ``limit``, quarantined and unreadable ones included."""
        store = self._store
        listed = await asyncio.to_thread(lambda: (store.list_ids(), store.quarantined()))
        on_disk = set(listed[0])  # queries in a shared store: never on the event loop
        quarantined = set(listed[1]) - on_disk
        ids = sorted(on_disk | quarantined, reverse=True)[:limit]
        from_disk = [sid for sid in ids if sid not in quarantined and not self._is_live(sid)]
        headers = await asyncio.to_thread(lambda: {sid: self._header(sid) for sid in from_disk})
        out: list[dict[str, Any]] = []
        for sid in ids:
            if sid in quarantined:
                out.append(await asyncio.to_thread(self._quarantined, sid))
            elif sid in headers:
                out.append(headers[sid])
            else:
                entry = await self._live_entry(sid)
                if entry is not None:
                    out.append(entry)
        return out

    async def _live_entry(self, session_id: str) -> dict[str, Any] | None:
        try:
            info = await self._info(session_id)
        except SessionQuarantinedError:
            return await asyncio.to_thread(self._quarantined, session_id)
        except LeaseHeldError:  # another node took it meanwhile: what the store says
            return await asyncio.to_thread(self._header, session_id)
        except StorageError as exc:  # stopped meanwhile, and now unreadable
            return _entry(session_id, {}, UNAVAILABLE, str(exc))
        except LookupError:  # deleted meanwhile
            return None
        return {
            "session_id": session_id,
            "agent": info.agent,
            "status": info.status.value,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
            "gateway": info.gateway,
            "gateway_chat_id": info.gateway_chat_id,
            "gateway_chat_type": info.gateway_chat_type,
        }

    def _header(self, session_id: str) -> dict[str, Any]:
        try:
            head = self._store.header(session_id)
        except StorageError as exc:
            return _entry(session_id, {}, UNAVAILABLE, str(exc))
        except SnapshotCorruptError as exc:
            return _entry(session_id, {}, UNAVAILABLE, f"{exc}; {_UNCHECKED}")
        if head is None:
            reason = f"{STATE_FILENAME} is missing; {_UNCHECKED}"
            return _entry(session_id, {}, UNAVAILABLE, reason)
        return _entry(session_id, head, str(head.get("status", "active")))

    def _quarantined(self, session_id: str) -> dict[str, Any]:
        try:
            head = self._store.header(session_id, quarantined=True)
        except (StorageError, SnapshotCorruptError):
            head = None  # the reason says what is wrong
        reason = self._store.quarantine_reason(session_id) or ""
        return _entry(session_id, head or {}, QUARANTINED, reason)


def _entry(
    session_id: str, head: dict[str, Any], status: str, reason: str | None = None
) -> dict[str, Any]:
    entry = {
        "session_id": session_id,
        "agent": str(head.get("agent", "")),
        "status": status,
        "created_at": str(head.get("created_at", "")),
        "updated_at": str(head.get("updated_at") or head.get("snapshot_at") or ""),
        "gateway": _chat_field(head, "gateway"),
        "gateway_chat_id": _chat_field(head, "gateway_chat_id"),
        "gateway_chat_type": _chat_field(head, "gateway_chat_type"),
    }
    if reason is not None:
        entry["reason"] = reason
    return entry


def _chat_field(head: dict[str, Any], key: str) -> str | None:
    """A header's chat field (kept under ``config``), as text; None when it has none."""
    config = head.get("config")
    value = config.get(key) if isinstance(config, dict) else None
    return None if value is None or value == "" else str(value)
