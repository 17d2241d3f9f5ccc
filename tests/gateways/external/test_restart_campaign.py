"""The external gateway restart campaign, short: ``duragent serve`` SIGKILLed behind a gateway.

The long run is ``bench/restarts/external.py``; both use ``duragent.testing.external_campaign``,
whose docstring defines what the platform does in each mode. With the ``ack`` capability nothing is
lost: every message answered exactly once. A gateway written for the reference (no ``ack``) cannot
know what was still in the pipe when ``serve`` died: such messages are counted apart, never as
missing, and everything duragent recorded is answered exactly once. A failure's ``problems`` name
the chat and message; the workspace, ``commands.jsonl`` and each serving process's log stay in
``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.testing.external_campaign import run_campaign


@pytest.mark.parametrize("ack", [True, False], ids=["ack", "reference"])
async def test_every_accepted_message_is_answered_once_in_order_across_two_kills(
    tmp_path: Path, ack: bool
) -> None:
    result, _repressed, _resent = await run_campaign(
        messages=48, chats=6, kills=2, ack=ack, seed=17, workdir=tmp_path, stall_seconds=120
    )
    assert result.problems == []
    assert result.kills == 2
    if ack:
        assert result.lost_in_flight == 0
    delivered = result.messages - result.lost_in_flight
    assert result.answered_once + result.sent_twice_after_kill_answers == delivered
    assert result.not_delivered_offline == 0  # the platform holds what chats write meanwhile
    assert result.order_violations == 0
    assert result.sent_twice_real == 0
    assert result.approvals_held >= 1
    assert result.approvals_intact == result.approvals_held
    assert result.buffers_intact == result.buffer_checks > 0
