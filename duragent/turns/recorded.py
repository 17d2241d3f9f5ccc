"""What a turn starts from: a new message (``Incoming``) or messages on disk (``Recorded``).

A chat queue records each message the moment it arrives (``TurnRunner.accept``, answering
with ``Accepted``) and runs the turn later (``TurnRunner.answer``), which starts from
``Recorded``: the same preparation as a turn for a new message, without recording one. Kept
apart from ``runner`` so the runner stays about turns and their concurrency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from duragent.core.attachments import Attachment
from duragent.core.messages import Message, Role, is_steering
from duragent.session import SessionHandle, UserMessageResult
from duragent.turns.inbox import Steered

__all__ = ["Accepted", "Incoming", "Recorded", "needs_restating", "trailing_user_text"]


@dataclass(frozen=True, slots=True)
class Accepted:
    """A message ``TurnRunner.accept`` recorded (or recognised), and what it still needs."""

    seq: int
    """The user message's seq (the first copy's, for a redelivered platform id)."""
    duplicate: bool = False
    """Its platform id was recorded before (a redelivered update)."""
    answered: bool = False
    """A duplicate already answered: nothing more to do for it."""
    steered: Steered | None = None
    """Handed to the loop running for the session: its ticket says, once that loop ended,
    whether the loop read it (then its reply answers it) or not (it needs a turn of its
    own)."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A new message a turn records first (the fields ``add_user_message`` takes)."""

    content: str
    sender_id: str | None
    sender_name: str | None
    platform_message_id: str | None
    context_blocks: Sequence[str] = ()
    agent: str | None = None
    """The agent the session must be of (refused before writing when it is another)."""
    attachments: tuple[Attachment, ...] = ()
    """What it carried, kept first (``TurnRunner.attachments``), named in its event."""

    async def record(
        self, session: SessionHandle, *, with_context: bool = False
    ) -> UserMessageResult:
        """Record the message (de-duplicated by platform id) and prepare its turn."""
        return await session.add_user_message(
            self.content,
            sender_id=self.sender_id,
            sender_name=self.sender_name,
            platform_message_id=self.platform_message_id,
            with_context=with_context,
            agent=self.agent,
            attachments=self.attachments,
        )


@dataclass(frozen=True, slots=True)
class Recorded:
    """Messages ``accept`` recorded up to ``seq``, whose turn ``answer`` runs."""

    seq: int
    content: str
    context_blocks: Sequence[str] = ()
    """Quoted context for this turn only (a group's context buffer, ``context.quoting``)."""
    sender_id: str | None = None
    """Who the turn answers: the requester of an approval it asks for."""
    answers_seq: int | None = None
    """Set when later messages wait for turns of their own: the reply answers up to here."""

    async def record(
        self, session: SessionHandle, *, with_context: bool = False
    ) -> UserMessageResult:
        """Prepare the turn (nothing is recorded; ``with_context`` is always given)."""
        return await session.turn_context(self.seq)


def trailing_user_text(messages: list[Message]) -> str:
    """The user messages that end the window, joined by newlines ("" after a reply)."""
    tail: list[str] = []
    for message in reversed(messages):
        if message.role is not Role.USER or is_steering(message):
            break  # (hook steering belongs to the tool exchange before it)
        tail.append(message.text)
    return "\n".join(reversed(tail))


def needs_restating(messages: list[Message], content: str) -> bool:
    """Whether a turn for ``content`` (recorded earlier) must show it again at the end.

    Not when the window already ends with exactly those messages, nor when it ends with a
    tool exchange (calls and their results) right after them: that is this turn, cut by a
    crash after the calls were recorded, and it goes on from the results as it would have.
    Shown again after them, the question would read as asked anew and the model would start
    over, calling its tools again (a note remembered twice, a command asked to approve twice).
    """
    end = len(messages)
    while end and _in_exchange(messages[end - 1]):
        end -= 1
    tail = trailing_user_text(messages[:end])
    return not (tail == content or tail.endswith(f"\n{content}"))


def _in_exchange(message: Message) -> bool:
    """A message of a tool exchange: a call, its result, or hook steering between them."""
    if message.role is Role.TOOL or is_steering(message):
        return True
    return message.role is Role.ASSISTANT and bool(message.tool_calls)
