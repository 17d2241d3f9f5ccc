"""Pairing (``dm.policy: pairing``): one-time codes for unknown DM senders, and who an owner paired.

A stranger who writes to the bot in a direct message is given a code instead of an answer;
an owner approves it (``/pair <code>`` to the bot, or ``duragent pairing approve <code>``)
and from then on the sender is let in like an allowlisted one. Each agent has one small file,
``<workspace>/.duragent/pairing/<agent>.yaml``, holding both lists::

    paired:
    - gateway: "telegram"
      sender_id: "1002"
      name: "bob"
      paired_at: "2026-12-05T10:00:00.250000Z"
      approved_by: "telegram:1001"      # or "cli"
    pending:
    - code: "K7QW3MZP"
      gateway: "telegram"
      sender_id: "1003"
      chat_id: "1003"
      name: "eve"
      requested_at: "2026-12-05T10:01:00Z"
      expires_at: "2026-12-05T11:01:00Z"

Why a file and not the session store: the CLI approves without a server, and a person can
read (or delete) it. Every change is a read-modify-write under an exclusive ``flock`` on
``<agent>.lock`` (the server and the CLI may write at once) and an atomic replacement, so a
crash leaves the old list or the new. Reads are cached while the file's size and mtime stay
the same, so an approval made by the CLI is seen by the running server at the next message.
With the PostgreSQL store the file is per node, like ``policy.local.yaml``: a code is known
to the node that gave it.

A pairing lets in what the sender writes from the second of ``paired_at`` on, judged by when
the platform says a message was sent: a message written in an earlier second (one a restart
made the platform deliver again after an owner approved) is still a stranger's. Whole
seconds, as Telegram dates its messages: one written in the approval's own second is let in
(a person told they are paired writes later than that; a script may write at once). The
chat pipeline passes a time over a day from now as none (``pairing_chat.REDELIVERY_SECONDS``).

Codes: ``CODE_LENGTH`` characters of an alphabet without look-alikes (no 0/O, 1/I/L), valid
``CODE_TTL_SECONDS``; at most ``MAX_PENDING`` wait per agent (a flood of strangers cannot
fill the file), and a stranger who asks again while their code is valid gets the same one.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import secrets
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from duragent.core.clock import utc_now
from duragent.errors import ConfigError
from duragent.store.atomic import atomic_write
from duragent.store.yaml_emit import dump_yaml

__all__ = [
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "CODE_TTL_SECONDS",
    "MAX_PENDING",
    "PAIRING_DIR",
    "CodeRequest",
    "PairedSender",
    "PairingBook",
    "PairingFileError",
    "PendingCode",
    "book_for",
    "normalise_code",
]

PAIRING_DIR = "pairing"
"""The folder under the workspace's ``.duragent/`` holding one ``<agent>.yaml`` per agent."""
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_SECONDS = 3600
MAX_PENDING = 3
"""Codes waiting for an owner per agent; a further stranger is told to try later."""

_HEADER = (
    "# Pairing of agent {agent!r} (spec.access.dm.policy: pairing): the direct-message\n"
    "# senders an owner approved, and the codes waiting for an owner. Written by duragent;\n"
    "# change it with `duragent pairing list|approve|revoke` (or /pair <code> to the bot).\n"
)
_THREAD_LOCK = threading.Lock()
"""``flock`` serialises processes; this serialises the threads of one process."""


class PairingFileError(ConfigError):
    """A pairing file cannot be read; the message names the file and the fix."""


@dataclass(frozen=True, slots=True)
class PendingCode:
    """A code a stranger was given, waiting for an owner."""

    code: str
    gateway: str
    sender_id: str
    chat_id: str
    name: str
    requested_at: str
    expires_at: str

    def expired(self, now: datetime) -> bool:
        """Whether the code is past its hour."""
        return self.seconds_left(now) <= 0

    def seconds_left(self, now: datetime) -> float:
        """How long the code is still valid (0 or less: expired)."""
        return (_parse_time(self.expires_at) - now).total_seconds()


@dataclass(frozen=True, slots=True)
class PairedSender:
    """A direct-message sender an owner approved."""

    gateway: str
    sender_id: str
    name: str
    paired_at: str
    approved_by: str


@dataclass(frozen=True, slots=True)
class CodeRequest:
    """What a stranger's message gets: their code (new or the one still valid), or none."""

    code: PendingCode | None
    """None: ``MAX_PENDING`` codes already wait; the stranger is told to try later."""
    new: bool


def normalise_code(text: str) -> str:
    """A code as typed (any case, spaces or dashes) in the form it is stored."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def _stamp(moment: datetime, *, precise: bool = False) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if precise else "%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class PairingBook:
    """One agent's pairing file (see module docstring)."""

    def __init__(self, directory: Path, agent: str) -> None:
        self.agent = agent
        self.path = directory / f"{agent}.yaml"
        self._lock_path = directory / f"{agent}.lock"
        self._cache: tuple[tuple[int, int], list[PairedSender], list[PendingCode]] | None = None

    # --- reading ---------------------------------------------------------------------------

    def paired(self, gateway: str, sent_at: float | None = None) -> frozenset[str]:
        """The sender ids an owner paired on ``gateway`` (raises ``PairingFileError``).

        ``sent_at``: only those paired by then (Unix seconds; from the approval's second
        on), so a message written before its sender was approved stays a stranger's; None:
        every paired sender.
        """
        paired, _ = self._read()
        return frozenset(
            p.sender_id
            for p in paired
            if p.gateway == gateway
            and (sent_at is None or math.floor(_parse_time(p.paired_at).timestamp()) <= sent_at)
        )

    def paired_senders(self) -> list[PairedSender]:
        """Every paired sender, in the order they were approved."""
        return self._read()[0]

    def pending(self) -> list[PendingCode]:
        """The codes still valid, oldest first."""
        now = utc_now()
        return [p for p in self._read()[1] if not p.expired(now)]

    def _read(self) -> tuple[list[PairedSender], list[PendingCode]]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return [], []
        key = (st.st_size, st.st_mtime_ns)
        if self._cache is not None and self._cache[0] == key:
            return list(self._cache[1]), list(self._cache[2])
        paired, pending = self._parse(self.path.read_text(encoding="utf-8"))
        self._cache = (key, paired, pending)
        return list(paired), list(pending)

    def _parse(self, text: str) -> tuple[list[PairedSender], list[PendingCode]]:
        fix = "fix or delete it (deleting it forgets every pairing of this agent)"
        try:
            data = yaml.safe_load(text) or {}
            if not isinstance(data, dict):
                raise TypeError("the file is not a mapping with paired: and pending:")
            paired = [PairedSender(**_texts(e)) for e in data.get("paired") or []]
            pending = [PendingCode(**_texts(e)) for e in data.get("pending") or []]
            for p in pending:
                _parse_time(p.expires_at)
            for q in paired:
                _parse_time(q.paired_at)
        except (yaml.YAMLError, TypeError, ValueError, AttributeError) as exc:
            raise PairingFileError(
                f"cannot read the pairing file: {exc}", file=self.path, fix=fix
            ) from exc
        return paired, pending

    # --- changing --------------------------------------------------------------------------

    def request(self, gateway: str, sender_id: str, chat_id: str, name: str) -> CodeRequest:
        """The stranger's valid code, else a new one, else none when ``MAX_PENDING`` wait."""
        with self._locked() as (paired, pending):
            now = utc_now()
            live = [p for p in pending if not p.expired(now)]
            for p in live:
                if p.gateway == gateway and p.sender_id == sender_id:
                    return CodeRequest(p, new=False)
            if len(live) >= MAX_PENDING:
                if len(live) != len(pending):
                    self._write(paired, live)
                return CodeRequest(None, new=False)
            taken = {p.code for p in live}
            code = _new_code()
            while code in taken:
                code = _new_code()
            entry = PendingCode(
                code=code,
                gateway=gateway,
                sender_id=sender_id,
                chat_id=chat_id,
                name=name,
                requested_at=_stamp(now),
                expires_at=_stamp(now + timedelta(seconds=CODE_TTL_SECONDS)),
            )
            self._write(paired, [*live, entry])
            return CodeRequest(entry, new=True)

    def approve(self, code: str, approved_by: str) -> PendingCode | None:
        """Pair the sender the valid ``code`` was given to; None when no such code waits."""
        wanted = normalise_code(code)
        with self._locked() as (paired, pending):
            now = utc_now()
            live = [p for p in pending if not p.expired(now)]
            found = next((p for p in live if p.code == wanted), None)
            if found is None:
                if len(live) != len(pending):
                    self._write(paired, live)
                return None
            kept = [
                p for p in paired if (p.gateway, p.sender_id) != (found.gateway, found.sender_id)
            ]
            kept.append(
                PairedSender(
                    gateway=found.gateway,
                    sender_id=found.sender_id,
                    name=found.name,
                    paired_at=_stamp(now, precise=True),
                    approved_by=approved_by,
                )
            )
            self._write(kept, [p for p in live if p is not found])
            return found

    def revoke(self, gateway: str, sender_id: str) -> bool:
        """Forget a paired sender (their next DM gets a code again); whether one was paired."""
        with self._locked() as (paired, pending):
            kept = [p for p in paired if (p.gateway, p.sender_id) != (gateway, sender_id)]
            if len(kept) == len(paired):
                return False
            self._write(kept, pending)
            return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[list[PairedSender], list[PendingCode]]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _THREAD_LOCK:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._cache = None  # another process may have written: read afresh
                yield self._read()
            finally:
                os.close(fd)  # closing releases the flock

    def _write(self, paired: list[PairedSender], pending: list[PendingCode]) -> None:
        body = dump_yaml(
            {"paired": [asdict(p) for p in paired], "pending": [asdict(p) for p in pending]}
        )
        text = _HEADER.format(agent=self.agent) + body
        atomic_write(self.path, text.encode("utf-8"), new_file_mode=0o600)
        self._cache = None


def _texts(entry: object) -> dict[str, str]:
    """An entry's fields as text (an id written as a number by a person stays an id)."""
    if not isinstance(entry, dict):
        raise TypeError(f"an entry is {type(entry).__name__}, not a mapping")
    return {str(k): str(v) for k, v in entry.items()}


def _new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def book_for(workspace_dir: Path, agent: str) -> PairingBook:
    """The pairing book of ``agent`` in the workspace whose ``.duragent`` is ``workspace_dir``."""
    return PairingBook(workspace_dir / PAIRING_DIR, agent)
