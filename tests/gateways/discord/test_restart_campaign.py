"""The Discord restart campaign, short: chats keep writing while ``duragent serve`` is SIGKILLed.

The long run is ``bench/restarts/discord.py``; both use ``duragent.testing.discord_campaign``,
whose docstring defines "accepted" on a platform that delivers each message once (messages written
while no bot is connected, or in flight to a killed process, are counted apart, never as
lost). A failure's ``problems`` name the chat and message; the workspace, ``calls.jsonl``
(every REST call) and each serving process's log stay in ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing.discord_campaign import run_campaign


async def test_every_delivered_message_is_answered_once_in_order_across_two_kills(
    tmp_path: Path,
) -> None:
    result, _repressed = await run_campaign(
        messages=48, chats=6, kills=2, seed=17, workdir=tmp_path, stall_seconds=120
    )
    assert result.problems == []
    assert result.kills == 2
    delivered = result.messages - result.not_delivered_offline - result.lost_in_flight
    assert result.answered_once + result.sent_twice_after_kill_answers == delivered
    assert result.order_violations == 0
    assert result.sent_twice_real == 0
    assert result.approvals_held >= 1
    assert result.approvals_intact == result.approvals_held
    assert result.buffers_intact == result.buffer_checks > 0
