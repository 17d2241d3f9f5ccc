"""A running turn's inbox: messages that arrive while its loop runs, and which it read.

A message that arrives while a session's loop runs is recorded and handed to that loop
(*steered*), which reads it at its next boundary (before a model call, between tool calls,
after a final reply). A loop can end without reading one: it stopped at
``max_tool_iterations``, paused on an approval, or ended just as the message was being
recorded. Such a message was never shown to the model, so the reply that ended the turn does
not answer it. The inbox makes that visible instead of guessing from sequence numbers:

- ``put`` hands a message over and returns its ``Steered`` ticket, or None once the loop no
  longer reads (the caller then gives the message a turn of its own);
- the loop's ``take`` marks what it takes ``read``;
- ``close`` (when the loop ends, in the same step that marks the turn finished) refuses later
  puts; a ticket still unread then never will be. It stamps every ticket with how the loop
  ended (``Ending``), so ``Steered.needs_own_turn`` is the one rule, for every front end,
  of whether a steered message still needs a turn: HTTP's ``run`` and a chat queue's
  ``batch`` mode both read it (issue 35: they used to decide apart, the chat queue by asking
  the session what its last turn settled).

One inbox per loop: a turn's leftovers can never leak into the next turn's request.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Ending", "Inbox", "Steered"]


class Ending(enum.Enum):
    """How the loop a message was handed to ended."""

    ANSWERED = "answered"
    """It wrote a reply, or recorded a failure the person was told: what it read is settled."""
    PAUSED = "paused"
    """It paused on an approval: it goes on, with every message recorded before, once the
    approval is decided."""
    CUT = "cut"
    """It raised (storage failure, cancellation, lost lease): nothing it read was answered."""


@dataclass(eq=False, slots=True)
class Steered:
    """One message handed to a running loop."""

    content: str
    seq: int | None = None
    """Where the message was recorded (None: a caller that did not say)."""
    read: bool = False
    """Set when the loop took it into its turn (the model saw it)."""
    ending: Ending | None = None
    """Set when that loop ended (None while it runs)."""

    @property
    def settled(self) -> bool:
        """The loop it was handed to has ended."""
        return self.ending is not None

    @property
    def needs_own_turn(self) -> bool:
        """Whether the message still needs a turn of its own, its loop having ended.

        A paused loop keeps it (the model sees it when the turn goes on); one that answered
        settled it only if it read it; one that was cut settled nothing.
        """
        if self.ending is Ending.PAUSED:
            return False
        return self.ending is Ending.CUT or not self.read


class Inbox:
    """Messages for one running loop (see module docstring)."""

    __slots__ = ("_given", "_open", "_waiting")

    def __init__(self) -> None:
        self._waiting: list[Steered] = []
        self._given: list[Steered] = []
        self._open = True

    @property
    def is_open(self) -> bool:
        """Whether the loop still reads what is put here."""
        return self._open

    def put(self, content: str, seq: int | None = None) -> Steered | None:
        """Hand ``content`` (recorded at ``seq``) to the loop.

        None when the loop has ended or paused: nothing was handed over.
        """
        if not self._open:
            return None
        ticket = Steered(content, seq)
        self._waiting.append(ticket)
        self._given.append(ticket)
        return ticket

    def pending(self) -> list[str]:
        """What waits for the loop's next look (not marked read)."""
        return [ticket.content for ticket in self._waiting]

    def take(self) -> list[str]:
        """What arrived since the last take, in order, each marked read."""
        taken, self._waiting = self._waiting, []
        for ticket in taken:
            ticket.read = True
        return [ticket.content for ticket in taken]

    def pause(self) -> int | None:
        """The loop asks for an approval: the newest seq handed over, later puts refused.

        The paused turn goes on with what was handed over once decided; a message put after
        gets a turn of its own from its caller (which cancels the approval, as any message
        arriving while one waits does).
        """
        self._open = False
        seqs = [t.seq for t in self._given if t.seq is not None]
        return max(seqs, default=None)

    def close(self, ending: Ending = Ending.ANSWERED) -> list[Steered]:
        """The loop has ended (``ending``): refuse later puts, stamp every ticket given.

        Returns what the loop never read.
        """
        self._open = False
        for ticket in self._given:
            ticket.ending = ending
        self._given = []
        left, self._waiting = self._waiting, []
        return left
