"""The year's verdict on ``/status`` and ``/reset``: a reset that kept its session fails, and
so does a copy of a reply no kill explains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.year.commands import ChatCommand, check_commands
from duragent.frontkit.commands import RESET_DONE
from duragent.testing.campaign_verdict import SentText
from duragent.testing.serve_process import ServeProcess


def test_the_commands_verdict_fails_a_reset_that_kept_the_session_and_an_unexplained_copy(
    tmp_path: Path,
) -> None:
    serve = ServeProcess(tmp_path / "duragent.yaml")
    serve.killed = [True, False]  # the first process was killed, the second was not
    serve.lifetimes = [[0.0, 1.5], [1.6, float("inf")]]
    old = "Session: session_" + "A" * 26 + "\nAgent: small\nStatus: Active\nCreated: x"

    def chat(after_reset: str, reset_reply: str, copy_lifetime: int) -> Any:
        status = ChatCommand(1001, 2, "status", pushed_at=1.0)
        status.reply = SentText(1001, old, 1.0, 0, False)
        status.copies = [SentText(1001, old, 2.0, copy_lifetime, False)]
        reset = ChatCommand(1001, 9, "reset", pushed_at=3.0)
        reset.reply = SentText(1001, reset_reply, 3.0, 1, False)
        again = ChatCommand(1001, 10, "status", after_reset=True, pushed_at=4.0)
        again.reply = SentText(1001, after_reset, 4.0, 1, False)
        return check_commands({1001: [status, reset, again]}, serve)

    new = old.replace("A" * 26, "B" * 26)
    good = chat(new, RESET_DONE, copy_lifetime=1)
    assert good.problems == []
    assert (good.fresh_sessions, good.rerun_after_kill) == (1, 1)
    bad = chat(old, "No active session to reset.", copy_lifetime=0)
    assert len(bad.problems) == 3
    assert bad.fresh_sessions == 0
