"""The restart campaign, short: chats keep writing while ``duragent serve`` is SIGKILLed twice.

The long run (1,000 messages, 50 chats, 5+ kills) is ``bench/restarts/telegram.py``; both use
``duragent.testing.telegram_campaign``, whose docstring defines each check. A failure's ``problems``
name the chat and message; the workspace, ``calls.jsonl`` (every Bot API call) and each serving
process's log stay in ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing.telegram_campaign import run_campaign


async def test_every_message_is_answered_once_in_order_across_two_kills(tmp_path: Path) -> None:
    result = await run_campaign(
        messages=72, chats=9, kills=2, seed=16, workdir=tmp_path, stall_seconds=120
    )
    assert result.problems == []
    assert result.kills == 2
    assert result.answered_once + result.sent_twice_after_kill_answers == result.messages
    assert result.order_violations == 0
    assert result.sent_twice_real == 0
    assert result.approvals_held >= 1
    assert result.approvals_intact == result.approvals_held
    assert result.buffers_intact == result.buffer_checks > 0
