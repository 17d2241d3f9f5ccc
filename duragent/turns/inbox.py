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
  puts; a ticket still unread then never will be.

One inbox per loop: a turn's leftovers can never leak into the next turn's request.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Inbox", "Steered"]


@dataclass(eq=False, slots=True)
class Steered:
    """One message handed to a running loop."""

    content: str
    read: bool = False
    """Set when the loop took it into its turn (the model saw it)."""


class Inbox:
    """Messages for one running loop (see module docstring)."""

    __slots__ = ("_open", "_waiting")

    def __init__(self) -> None:
        self._waiting: list[Steered] = []
        self._open = True

    @property
    def is_open(self) -> bool:
        """Whether the loop still reads what is put here."""
        return self._open

    def put(self, content: str) -> Steered | None:
        """Hand ``content`` to the loop; None when it has ended (nothing was handed over)."""
        if not self._open:
            return None
        ticket = Steered(content)
        self._waiting.append(ticket)
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

    def close(self) -> list[Steered]:
        """The loop has ended: later puts are refused. Returns what it never read."""
        self._open = False
        left, self._waiting = self._waiting, []
        return left
