"""What a stalled year waits for: each waiting chat, the clock, the kills (``stall.json``).

Written when nothing was answered for the campaign's ``stall_seconds``, to read the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.year.commands import due

if TYPE_CHECKING:
    from bench.year.campaign import YearCampaign

__all__ = ["stall_state"]


def stall_state(campaign: YearCampaign) -> dict[str, Any]:
    """The campaign's state as JSON: the clock and its brake, the kills, the waiting chats."""
    chats: list[dict[str, Any]] = []
    for chat in campaign.plan:
        waiting = [m.token for m in chat.messages[: chat.next] if m.answered_at is None]
        due_ms = campaign._due_in_chat(chat, chat.next) if chat.next < len(chat.messages) else None
        command = due(campaign.commands.get(chat.chat_id, []), chat.next)
        if not waiting and command is None and (due_ms is None or due_ms > campaign.clock.ms):
            continue
        chats.append(
            {
                "chat": chat.chat_id,
                "next": chat.next,
                "of": len(chat.messages),
                "waiting": waiting,
                "next_due_ms": due_ms,
                "command": None
                if command is None
                else {
                    "text": command.text,
                    "pushed": command.pushed_at is not None,
                    "replied": command.reply is not None,
                },
            }
        )
    state = {
        "clock_ms": campaign.clock.ms,
        "target_ms": campaign._time_of(campaign.answered + len(campaign.plan)),
        "brake_ms": campaign._run_in_progress(),
        "answered": campaign.answered,
        "pushed": campaign.pushed,
        "kills_done": campaign.kills_done,
        "next_kill_at": campaign.kill_points[campaign.kills_done]
        if campaign.kills_done < len(campaign.kill_points)
        else None,
        "held": [m.token for m in campaign.held],
        "updates_unconfirmed": len(campaign.tg.pending_updates()),
        "polls_waiting": campaign.tg.polls_waiting,
        "chats": chats,
    }
    return state
