"""How many model tokens one chat may use per day (issue 33).

Every model call costs money, and anybody a chat lets in can make the agent call: a task
scheduled every minute, or a long conversation, spends the owner's tokens without end. With
``spec.access.quotas.tokens_per_chat_per_day`` (``0``: no limit) a chat whose calls used that
many tokens (prompt + completion, summaries included) on the current UTC day of the runtime's
calendar (``core.clock``) gets no more model calls until the next day: the loop asks
``TokenQuota.check`` before the turn's first call (and its summaries) and before every
further call, and a refused turn ends with a reply naming the limit and the field, recorded
like any reply (the person's message stays in the history; nothing is lost, the next day's
turns see it).

Today's total is the session's own counter (``SessionState.tokens_today``): each recorded
call's usage is added as its event is applied, the snapshot keeps it, so a restart knows it
without reading the log. A turn starts from that counter as its context brought it (no extra
round trip to the session's actor, issue 35) and adds each call it makes, summaries
included, as the call's usage is recorded (``spent``): the check itself reads nothing.
Sessions without a chat (the operator's, over HTTP or the CLI) are not limited.
"""

from __future__ import annotations

from duragent.core.clock import utc_now
from duragent.core.messages import Usage

__all__ = ["TOKEN_FIELD", "TokenQuota", "token_refusal"]

TOKEN_FIELD = "spec.access.quotas.tokens_per_chat_per_day"


class TokenQuota:
    """``tokens_per_chat_per_day`` for one chat session's turn (see module docstring)."""

    __slots__ = ("_day", "_used", "tokens_per_chat_per_day")

    def __init__(self, tokens_per_chat_per_day: int, *, day: str, used: int) -> None:
        """``day`` and ``used``: the session's counter when the turn started."""
        self.tokens_per_chat_per_day = tokens_per_chat_per_day
        self._day = day
        self._used = used

    def _today(self) -> int:
        today = utc_now().date().isoformat()
        if today > self._day:  # a new day starts from zero (a clock set back keeps counting)
            self._day, self._used = today, 0
        return self._used

    def spent(self, usage: Usage | None) -> None:
        """A call of this turn used ``usage`` (recorded with it, so the counter has it too)."""
        if usage is not None:
            self._today()
            self._used += usage.prompt_tokens + usage.completion_tokens

    def check(self) -> str | None:
        """The refusal when the chat used its tokens for today (None: it may call the model)."""
        limit = self.tokens_per_chat_per_day
        if limit <= 0 or self._today() < limit:
            return None
        return token_refusal(limit)


def token_refusal(limit: int) -> str:
    """The reply a turn refused by the daily token quota ends with."""
    return (
        f"This chat has used its {limit:,} model tokens for today ({TOKEN_FIELD}), so I "
        "cannot answer until tomorrow (UTC). Your message is kept: write again then and I "
        f"will see it. The agent's owner can raise {TOKEN_FIELD} in its agent.yaml."
    )
