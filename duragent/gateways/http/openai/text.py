"""What a completion says: the words of every model call of the turn, a blank line apart.

One completion is one turn, and a turn may call the model several times (tools run on the
server between the calls). The assistant message's ``content`` is everything the agent wrote
during the turn, in order: the words it wrote before a tool call ("Let me look at the
logs."), then those after. Texts of two model calls are separated by a blank line (less the
newlines the first already ends with), a paragraph break in the markdown clients render.
Streamed or not, the content is the same: the deltas of a stream join into exactly the
``content`` of the plain answer for the same turn (``TurnText`` makes both).

Why not only the final answer, as the session stores it: a stream cannot take back what it
sent, and holding each model call's words until it is known that no tool call follows would
make every stream arrive whole at the end. Why not glued, as the stream once was: "Let me
look.It says hi." reads as one broken sentence.

Also in the content:

- a pending approval: its sentence (``wire.approval_text``), after a blank line;
- a request that ran no loop of its own (its message joined a running turn, or was a copy
  of one already answered): the reply of the turn that answered it (``wire.reply_text``);
  nothing was streamed for it, so the stream sends that text at its end.

Replies written while more messages arrived (``Complete.earlier``) are separated by a blank
line in the plain answer, which knows them once the turn ended. A stream cannot yet: the
turn loop tells its sink nothing between such a reply and the next one, so there they are
glued until ``TurnSink`` says where a reply ends.
"""

from __future__ import annotations

from collections.abc import Sequence

from duragent.core.messages import ToolCall
from duragent.gateways.http.openai.wire import approval_text, reply_text
from duragent.turns import AwaitingApproval, Complete, Failed, TurnResult

__all__ = ["TextSink", "TurnText"]

GAP = "\n\n"
"""Between the texts of two model calls of one turn."""


def _gap_after(part: list[str]) -> str:
    """The blank line to write after ``part``, less the newlines it already ends with."""
    newlines = 0
    for piece in reversed(part):  # only its end is read: a long reply costs nothing more
        kept = piece.rstrip("\n")
        newlines += len(piece) - len(kept)
        if kept or newlines >= len(GAP):
            break
    return GAP[min(newlines, len(GAP)) :]


class TurnText:
    """The content of one turn's completion, built as its progress arrives."""

    def __init__(self) -> None:
        self._parts: list[list[str]] = []
        """The pieces of each model call that wrote any (replies to late messages glued);
        joined only at the end, so a reply of many small deltas is not copied at each."""
        self._new_call = True
        """A model call may have begun since the last words: the next words start a part."""

    def add(self, text: str) -> str:
        """What to send for the model's ``text``: itself, after a gap if it starts a part."""
        if not text:
            return ""
        if not self._new_call:
            self._parts[-1].append(text)
            return text
        self._new_call = False
        gap = _gap_after(self._parts[-1]) if self._parts else ""
        self._parts.append([text])
        return gap + text

    def tool_call(self) -> None:
        """The model call asked for tools: words after them come from another call."""
        self._new_call = True

    def ending(self, result: TurnResult) -> str:
        """What the turn's end adds: an approval's sentence, or the reply of another turn."""
        match result:
            case Failed():
                return ""
            case AwaitingApproval():
                self._new_call = True
                return self.add(approval_text(result))
            case _ if not self._parts:  # no loop of its own, or a model that did not stream
                self._new_call = True
                return self.add(reply_text(result))
        return ""

    def separate(self, replies: Sequence[str]) -> None:
        """Split the parts after each of ``replies`` (``Complete.earlier``), in order.

        They were written in this turn's loop, each by a model call of its own, so each is the
        start of a part (glued to what followed: the sink was not told where it ended). Words
        that are not as the reply was stored are left as they are.
        """
        pending = [reply for reply in replies if reply]
        parts: list[list[str]] = []
        for part in ("".join(pieces) for pieces in self._parts):
            while pending and part.startswith(pending[0]):
                reply = pending.pop(0)
                if len(part) == len(reply):
                    break
                parts.append([reply])
                part = part[len(reply) :]
            parts.append([part])
        self._parts = parts

    @property
    def text(self) -> str:
        """The content so far: the parts, a gap between each two ("" when there is none).

        None: a retried message whose recorded reply had no words (the empty text of no parts
        raised, a 500 under three nodes).
        """
        if not self._parts:
            return ""
        gaps = ["", *(_gap_after(part) for part in self._parts[:-1])]
        return "".join(gap + "".join(part) for gap, part in zip(gaps, self._parts, strict=True))


class TextSink:
    """The ``TurnSink`` of a plain (not streamed) completion: it only keeps the words."""

    def __init__(self) -> None:
        self.text = TurnText()

    async def opened(self, agent: str, on_disconnect: str) -> None:
        """Nothing to open: the answer is written once the turn ended."""

    async def token(self, text: str) -> None:
        """Words of the model."""
        self.text.add(text)

    async def tool_call(self, call: ToolCall) -> None:
        """Words after it come from the next model call."""
        self.text.tool_call()

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Not part of the answer (tools run on the server)."""

    async def approval_required(self, call_id: str, command: str) -> None:
        """Its sentence is added at the end (``TurnText.ending``)."""

    async def summary(self, round_: int, through_seq: int, messages: int) -> None:
        """Not part of the answer."""

    def content(self, result: TurnResult) -> str:
        """The completion's content for the turn that ended with ``result``."""
        if isinstance(result, Complete):
            self.text.separate(result.earlier)
        self.text.ending(result)
        return self.text.text
