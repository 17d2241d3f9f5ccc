"""Approvals in a chat: the buttons' payloads, and what a press on one does.

The kit asks through ``OutboundPort.ask_approval``; the platform adapter draws the buttons
from ``approval_buttons(call_id)`` (labels and payloads), so every platform writes the same
payloads and ``ApprovalButtons.press`` reads them back. A payload is the reference's
``approve:<allow_once|allow_always|deny>`` followed by ``:<tag>``, a short digest of the call
id (8 hex digits, so any call id fits Telegram's 64-byte limit): a button left over from an
earlier approval of the same chat is refused instead of deciding the call waiting now. The
plain reference form (no tag) is read too.

A press: find the chat's session whose pending approval it answers (every agent's session in
that chat, from the chat index: a chat served by two agents is not ambiguous) → whether this
person may answer it, by that agent's ``spec.access`` (``approval_rights.refusal``: owners
any; the requester, ``PendingApproval.requester_id``, durable so the check holds after a
restart, theirs but for Allow Always; an approval nobody in the chat asked for, owners only;
blocked senders and strangers nothing) → the decision applied through ``ChatTurns.decide`` in the
background (running the tool and the rest of the turn can take minutes) → once the decision
is **on disk** (milliseconds), the toast and the approval message edited to show it. Not
before: a toast saying "Running" and buttons taken away, then a crash before the record,
would leave the person believing the call runs while the restarted process still waits for
a button that is gone (the restart campaigns found exactly that). A decision that could not
be recorded is toasted as such and the buttons stay. A second press while a decision is
being applied (a double tap) is told "No pending approval"; rights are checked first, so a
press by someone who may not decide is refused as such even then. Nothing is lost if the process
dies before the decision is recorded: the approval is still pending, nothing said otherwise,
and its buttons still work.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from duragent.agents import AgentCatalog
from duragent.errors import NotFoundError
from duragent.frontkit.approval_rights import NOT_REQUESTER, refusal
from duragent.frontkit.chat import ChatTurns
from duragent.frontkit.inbound import ButtonPress
from duragent.frontkit.outbound import SentMessage
from duragent.store import LeaseHeldError
from duragent.turns import DECISIONS, ApprovalDecision, PendingApproval

__all__ = [
    "BUTTON_LABELS",
    "NOT_RECORDED",
    "NOT_REQUESTER",
    "NO_PENDING",
    "NO_SESSION",
    "ApprovalButtons",
    "Button",
    "approval_buttons",
    "approval_prompt",
    "call_tag",
    "command_preview",
    "decided_text",
    "parse_button",
    "toast_text",
]

log = logging.getLogger(__name__)

PREFIX = "approve"
BUTTON_LABELS: dict[ApprovalDecision, str] = {
    ApprovalDecision.ALLOW_ONCE: "Allow Once",
    ApprovalDecision.ALLOW_ALWAYS: "Allow Always",
    ApprovalDecision.DENY: "Deny",
}
NO_PENDING = "No pending approval"
NOT_RECORDED = "Not recorded: nothing was decided. Please press again."
NO_SESSION = "No active session"
INVALID_DECISION = "Invalid decision"
PREVIEW_BYTES = 40


@dataclass(frozen=True, slots=True)
class Button:
    """One inline button: what it says and the payload a press hands back."""

    label: str
    data: str


def call_tag(call_id: str) -> str:
    """The short digest of ``call_id`` a button carries (8 hex digits)."""
    return hashlib.sha256(call_id.encode()).hexdigest()[:8]


def approval_buttons(call_id: str) -> tuple[Button, ...]:
    """Allow Once | Allow Always | Deny, in that order, for the call ``call_id``."""
    tag = call_tag(call_id)
    return tuple(Button(label, f"{PREFIX}:{d.value}:{tag}") for d, label in BUTTON_LABELS.items())


def approval_prompt(command: str) -> str:
    """The text of an approval message (the reference's): the command in a fenced block."""
    return f"Command requires approval:\n```\n{command}\n```"


def parse_button(data: str) -> tuple[str, str | None] | None:
    """``(decision, tag or None)`` from a payload; None when it is not an approval button.

    The decision is returned as written (checked by the caller: an unknown one gets the
    reference's "Invalid decision" toast).
    """
    parts = data.split(":")
    if len(parts) < 2 or parts[0] != PREFIX:
        return None
    return parts[1], (parts[2] if len(parts) > 2 and parts[2] else None)


def command_preview(command: str, limit: int = PREVIEW_BYTES) -> str:
    """The command's first line, cut at ``limit`` bytes on a character boundary + ``...``."""
    lines = command.splitlines()
    first = lines[0] if lines else command
    raw = first.encode()
    if len(raw) <= limit:
        return first
    return raw[:limit].decode(errors="ignore") + "..."


def toast_text(decision: ApprovalDecision, command: str) -> str:
    """What the presser sees at once: ``✓ Running: …``, ``✓ Always allowed: …``, ``✗ Denied: …``."""
    preview = command_preview(command)
    if decision is ApprovalDecision.ALLOW_ONCE:
        return f"✓ Running: {preview}"
    if decision is ApprovalDecision.ALLOW_ALWAYS:
        return f"✓ Always allowed: {preview}"
    return f"✗ Denied: {preview}"


def decided_text(decision: ApprovalDecision, command: str, decider: str) -> str:
    """The approval message once decided (its buttons gone): the command and the decision."""
    verdict = {
        ApprovalDecision.ALLOW_ONCE: "Allowed once",
        ApprovalDecision.ALLOW_ALWAYS: "Always allowed",
        ApprovalDecision.DENY: "Denied",
    }[decision]
    return f"Command:\n```\n{command}\n```\n{verdict} by {decider}"


class ApprovalButtons:
    """Answers presses on approval buttons (see module docstring)."""

    def __init__(
        self,
        chat: ChatTurns,
        agents: Callable[[], AgentCatalog],
        *,
        paired: Callable[[str, str], frozenset[str]] | None = None,
    ) -> None:
        self._chat = chat
        self._paired = paired
        """(agent, gateway) → the DM senders an owner paired (``dm.policy: pairing``)."""
        self._agents = agents
        """The agents' catalog: whose ``spec.access`` says who may answer (read per press,
        so a reload that names an owner holds for the next press)."""
        self._deciding: set[str] = set()
        """Sessions whose decision is being applied: a second press (a double tap, another
        button) is told nothing waits, instead of toasting a decision that will be refused."""

    async def press(self, press: ButtonPress) -> None:
        """Handle ``press``: a toast always answers it; a valid one decides in the background."""
        outbound = self._chat.outbound
        parsed = parse_button(press.data)
        if parsed is None:
            log.debug("button %r in %s is not an approval; ignored", press.data, press.chat.target)
            await outbound.answer_button(press.callback_id)
            return
        wire, tag = parsed
        if wire not in DECISIONS:
            await outbound.answer_button(press.callback_id, INVALID_DECISION)
            return
        decision = ApprovalDecision(wire)
        found = await self._waiting(press, tag)
        if isinstance(found, str):
            await outbound.answer_button(press.callback_id, found)
            return
        session_id, pending = found.session_id, found.pending
        refused = self._refusal(press, found, decision)  # rights first: a press that may not
        if refused is not None:  # decide is told so, whether or not a decision is underway
            await outbound.answer_button(press.callback_id, refused)
            return
        if session_id in self._deciding:
            await outbound.answer_button(press.callback_id, NO_PENDING)
            return
        self._deciding.add(session_id)  # before any await: a concurrent press sees it
        recorded = asyncio.Event()
        try:
            deciding = self._chat.tasks.spawn(
                self._decide(press, session_id, pending.call_id, decision, recorded),
                name=f"approval-{press.chat.target}",
            )
        except BaseException:
            self._deciding.discard(session_id)
            raise
        waiting = asyncio.ensure_future(recorded.wait())
        try:
            await asyncio.wait([deciding, waiting], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
        if not recorded.is_set():  # refused or failed before the record: the buttons stay
            await self._toast(press, NOT_RECORDED)
            return
        await self._toast(press, toast_text(decision, pending.command))
        try:
            await outbound.edit(
                SentMessage(press.chat, press.message_id),
                decided_text(decision, pending.command, press.sender.label),
            )
        except Exception as exc:  # a courtesy: the decision stands without it
            log.info("could not edit the approval message in %s: %s", press.chat.target, exc)

    def _refusal(
        self, press: ButtonPress, found: _Waiting, decision: ApprovalDecision
    ) -> str | None:
        """Why ``press`` may not decide (``approval_rights.refusal``); None when it may."""
        try:
            access = self._agents().get(found.agent).spec.access
        except NotFoundError:  # reloaded away: nobody's rights can be read, nobody decides
            log.info("approval in %s: agent %r is gone; refused", press.chat.target, found.agent)
            return NO_SESSION
        refused = refusal(
            access,
            gateway=press.gateway,
            chat_type=found.chat_type,
            chat_id=press.chat_id,
            presser_id=press.sender.id,
            requester_id=found.pending.requester_id,
            decision=decision,
            paired=self._paired(found.agent, press.gateway) if self._paired else (),
        )
        if refused is not None:
            log.info(
                "approval in %s: %s pressed %s (requester %s; owners are named in "
                "spec.access.owners.%s of agent %r); refused: %s",
                press.chat.target,
                press.sender.id,
                decision.value,
                found.pending.requester_id or "none: nobody in the chat asked",
                press.gateway,
                found.agent,
                refused,
            )
        return refused

    async def _toast(self, press: ButtonPress, text: str) -> None:
        try:
            await self._chat.outbound.answer_button(press.callback_id, text)
        except Exception as exc:  # a courtesy: the person pressed, the decision stands
            log.info("could not answer the button press in %s: %s", press.chat.target, exc)

    async def _decide(
        self,
        press: ButtonPress,
        session_id: str,
        call_id: str,
        decision: ApprovalDecision,
        recorded: asyncio.Event,
    ) -> None:
        try:
            await self._chat.decide(
                press.chat, session_id, call_id, decision, on_recorded=lambda _seq: recorded.set()
            )
        finally:
            self._deciding.discard(session_id)

    async def _waiting(self, press: ButtonPress, tag: str | None) -> _Waiting | str:
        """The session and approval ``press`` answers, or the toast saying why there is none."""
        queries = self._chat.turns.sessions
        sessions = await queries.sessions_of_chat_now(press.gateway, press.chat_id)
        if not sessions:
            return NO_SESSION
        for agent, session_id in sessions:
            try:
                info = await queries.info(session_id)
            except LeaseHeldError:  # it lives on another node: the relay hands the press there
                raise
            except Exception as exc:  # an unusable session cannot be waiting for this press
                log.info(
                    "approval in %s: session %s unusable: %s", press.chat.target, session_id, exc
                )
                continue
            pending = info.pending_approval
            if pending is not None and (tag is None or call_tag(pending.call_id) == tag):
                return _Waiting(session_id, agent, info.gateway_chat_type, pending)
        return NO_PENDING


@dataclass(frozen=True, slots=True)
class _Waiting:
    """The approval a press answers: its session, that session's agent and chat type."""

    session_id: str
    agent: str
    chat_type: str | None
    pending: PendingApproval
