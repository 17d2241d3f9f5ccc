"""Pairing in a chat: what a stranger is told, and ``/pair`` for owners (``pairing`` has the file).

``ChatFront`` asks this once per message, for every platform:

- ``paired``: the senders an owner paired on the message's gateway, when the agent's
  ``dm.policy`` is ``pairing`` and the message is a direct message (else nobody: the gate
  does not need them);
- ``stranger``: the reply a refused direct-message sender gets under ``pairing`` — their code
  (the same one while it is valid), or "too many waiting" — at most once per
  ``REMIND_SECONDS`` per sender, so a stranger's flood of messages is not mirrored back; their
  message is neither answered nor kept;
- ``command``: ``/pair <code>`` approves a code, ``/pair`` alone lists the codes waiting;
  only an owner (``spec.access.owners`` of the gateway the command came from) may, from any
  chat where they are recognised. The stranger is told they were approved when they wrote on
  the same gateway.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from duragent.agents.roles import DM_CHAT_TYPES, access_of, is_owner
from duragent.agents.spec import AccessSpec
from duragent.core.clock import now_seconds, utc_now
from duragent.frontkit.inbound import InboundMessage
from duragent.frontkit.outbound import ChatRef, OutboundPort
from duragent.frontkit.pairing import (
    CODE_TTL_SECONDS,
    PairingBook,
    PairingFileError,
    PendingCode,
    book_for,
    normalise_code,
)

__all__ = [
    "NO_CODES_WAITING",
    "PAIRED_NOTICE",
    "PAIRING_FULL",
    "PAIR_OWNERS_ONLY",
    "REMIND_SECONDS",
    "ChatPairing",
    "code_text",
    "parse_pair",
]

log = logging.getLogger(__name__)

REMIND_SECONDS = 60.0
"""A stranger is told their code at most this often (a new code is always told)."""

PAIRING_FULL = (
    "I only answer people my owner has approved, and too many pairing requests are waiting "
    "right now. Please try again in an hour."
)
PAIR_OWNERS_ONLY = "Only an owner of this bot can approve pairing codes."
PAIRED_NOTICE = "My owner approved you: I will answer your messages from now on."
NO_CODES_WAITING = "No pairing codes are waiting."
REDELIVERY_SECONDS = 24 * 3600
"""How old a message a platform delivers again can be (Telegram keeps updates 24 hours)."""
WRITTEN_BEFORE_PAIRING = (
    "You wrote this before my owner approved you, so I did not read it. Please send it again."
)


def code_text(code: PendingCode) -> str:
    """What a stranger reads: their code, how long it is valid, and what happens meanwhile."""
    return (
        f"I only answer people my owner has approved. Your pairing code is {code.code}: "
        f"give it to my owner, who approves it by sending /pair {code.code} to me. "
        f"It expires in {_minutes_left(code)} min. "
        "Until then I do not read or keep your messages."
    )


def parse_pair(text: str | None, bot_username: str | None) -> str | None:
    """The argument of ``/pair …`` (``""`` for ``/pair`` alone), or None for another text."""
    if not text:
        return None
    head, _, rest = text.strip().partition(" ")
    name, at, target = head[1:].partition("@") if head.startswith("/") else ("", "", "")
    if at and (not bot_username or target.lower() != bot_username.lstrip("@").lower()):
        return None
    return rest.strip() if name == "pair" else None


def _minutes_left(code: PendingCode) -> int:
    seconds = code.seconds_left(utc_now())
    return max(1, min(CODE_TTL_SECONDS // 60, round(seconds / 60)))


class ChatPairing:
    """The pairing books of a workspace's agents, as the chat pipeline uses them."""

    def __init__(self, workspace_dir: Path, outbound: OutboundPort) -> None:
        self._dir = workspace_dir
        self._outbound = outbound
        self._books: dict[str, PairingBook] = {}
        self._told: dict[tuple[str, str, str], float] = {}

    def book(self, agent: str) -> PairingBook:
        """The agent's book (one object per agent, so its read cache is shared)."""
        book = self._books.get(agent)
        if book is None:
            book = self._books[agent] = book_for(self._dir, agent)
        return book

    def applies(self, access: AccessSpec | None, msg: InboundMessage) -> bool:
        """Whether the message is a direct message to an agent with ``dm.policy: pairing``."""
        return (
            access_of(access).dm.policy == "pairing"
            and msg.chat_type.lower() in DM_CHAT_TYPES
            and not is_owner(access, msg.gateway, msg.sender.id)
        )

    def paired(self, agent: str, gateway: str, sent_at: float | None = None) -> frozenset[str]:
        """The senders paired on ``gateway`` (by ``sent_at`` when given: see ``pairing``).

        A sending time further than ``REDELIVERY_SECONDS`` from now is no message a restart
        brought back (a platform keeps an unconfirmed one a day at most): it is judged as it
        arrives, as nothing else judges a message by its date (a clock may be off).
        Nobody when the file cannot be read (logged): the pipeline fails closed.
        """
        if sent_at is not None and abs(now_seconds() - sent_at) > REDELIVERY_SECONDS:
            sent_at = None
        try:
            return self.book(agent).paired(gateway, sent_at)
        except PairingFileError as exc:
            log.error("agent %r: %s; treating every unknown sender as unpaired", agent, exc)
            return frozenset()

    async def stranger(self, agent: str, msg: InboundMessage) -> str | None:
        """The reply a refused sender gets (None: told recently, or the file is unreadable).

        A sender an owner paired after this message was written (a platform delivering it
        again after a restart) is told it was not read, rather than given a new code.
        """
        if msg.sender.id in self.paired(agent, msg.gateway):
            log.info(
                "agent %r: %s %s message %s was written before they were paired: not read",
                agent,
                msg.gateway,
                msg.sender.id,
                msg.message_id,
            )
            return WRITTEN_BEFORE_PAIRING
        try:
            got = await asyncio.to_thread(
                self.book(agent).request,
                msg.gateway,
                msg.sender.id,
                msg.chat_id,
                msg.sender.label,
            )
        except (PairingFileError, OSError) as exc:
            log.error("agent %r: no pairing code for %s: %s", agent, msg.sender.id, exc)
            return None
        key = (agent, msg.gateway, msg.sender.id)
        now = time.monotonic()
        if not got.new and now - self._told.get(key, -REMIND_SECONDS) < REMIND_SECONDS:
            return None
        if len(self._told) > 1_000:  # forget reminders long past: a bounded memory
            self._told = {k: t for k, t in self._told.items() if now - t < REMIND_SECONDS}
        self._told[key] = now
        if got.code is None:
            log.warning(
                "agent %r: pairing request from %s %s refused: %s",
                agent,
                msg.gateway,
                msg.sender.id,
                "too many codes wait (see duragent pairing list)",
            )
            return PAIRING_FULL
        if got.new:
            log.info(
                "agent %r: pairing code %s given to %s %s (%s); approve: /pair %s or "
                "duragent pairing approve %s",
                agent,
                got.code.code,
                msg.gateway,
                msg.sender.id,
                msg.sender.label,
                got.code.code,
                got.code.code,
            )
        return code_text(got.code)

    async def command(
        self, access: AccessSpec | None, agent: str, msg: InboundMessage, argument: str
    ) -> str:
        """Run ``/pair`` for the message's sender; the reply text."""
        if not is_owner(access, msg.gateway, msg.sender.id):
            return PAIR_OWNERS_ONLY
        if msg.chat_type.lower() not in DM_CHAT_TYPES:
            return PAIR_IN_DM_ONLY  # codes and strangers' names are not the group's business
        book = self.book(agent)
        try:
            if not argument:
                return _pending_text(await asyncio.to_thread(book.pending))
            approver = f"{msg.gateway}:{msg.sender.id}"
            found = await asyncio.to_thread(book.approve, argument, approver)
        except (PairingFileError, OSError) as exc:
            log.error("agent %r: cannot change the pairing file: %s", agent, exc)
            return (  # the details (a server path) go to the log, not to the chat
                "Cannot change the pairing file: see the server's log, or approve with "
                "`duragent pairing approve <code>` on the server."
            )
        if found is None:
            return (
                f"No pairing code {normalise_code(argument)} is waiting (a code expires "
                f"{CODE_TTL_SECONDS // 60} min after it was given). /pair alone lists them."
            )
        log.info("agent %r: %s paired %s %s", agent, approver, found.gateway, found.sender_id)
        if found.gateway == msg.gateway:
            try:
                await self._outbound.send_text(ChatRef(found.gateway, found.chat_id), PAIRED_NOTICE)
            except Exception as exc:  # the pairing stands; only the courtesy note failed
                log.warning("could not tell %s they are paired: %s", found.sender_id, exc)
        return (
            f"Paired {found.name} ({found.gateway} {found.sender_id}): I answer their direct "
            f"messages from now on. To undo: duragent pairing revoke {found.gateway} "
            f"{found.sender_id}"
        )


PAIR_IN_DM_ONLY = (
    "Send /pair to me in a direct message: pairing codes and who asked are not shown in groups."
)


def _pending_text(codes: list[PendingCode]) -> str:
    if not codes:
        return NO_CODES_WAITING
    lines = [
        f"{c.code}  {c.gateway} {c.sender_id} ({c.name}), expires in {_minutes_left(c)} min"
        for c in codes
    ]
    return "Pairing codes waiting (approve with /pair <code>):\n" + "\n".join(lines)
