"""Hostile-model campaign: the issue's full-size attacks against a real server, with numbers.

Each attack runs in its own session of one ``duragent serve`` process while a probe polls
``/livez`` every 100 ms; afterwards the same session must answer a normal turn (probed too:
the worst of both is shown). At the end the
server is SIGKILLed and restarted and every attacked session must answer again. Prints, per
attack, how long the turn took, the slowest ``/livez`` answer and the server's peak RSS.

    .venv/bin/python -m bench.http.hostile_model

Exit status 1 when a turn failed, a session did not answer afterwards, ``/livez`` took 1 s or
more, or the server's peak memory passed 500 MB.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from duragent.testing import Reply, ScriptItem
from duragent.testing.hostile import (
    LivenessProbe,
    endless_reply,
    huge_argument,
    huge_reply,
    invalid_unicode_call,
    many_calls,
    nested_arguments,
    peak_rss_bytes,
)
from duragent.testing.hostile_rig import HostileRig

LIVE_SECONDS = 1.0
MEMORY_BYTES = 500 << 20

ATTACKS: list[tuple[str, Callable[[], list[ScriptItem]]]] = [
    ("100 MB reply", lambda: huge_reply(100 << 20)),
    ("endless reply", endless_reply),
    ("40 MB tool argument", lambda: [*huge_argument(40 << 20), Reply(text="ok")]),
    ("arguments nested 100,000 deep", lambda: [*nested_arguments(100_000), Reply(text="ok")]),
    ("2,000 calls in one response", lambda: [*many_calls(2000), Reply(text="ok")]),
    ("lone surrogates", lambda: [*invalid_unicode_call(), Reply(text="ok")]),
]


def _normal_turn(rig: HostileRig, sid: str) -> bool:
    rig.script(Reply(text="all fine"))
    answer = rig.send(sid, "are you there?")
    return answer.status_code == 200 and answer.json().get("content") == "all fine"


def main() -> int:
    """Run every attack; print the table; 1 when any check failed."""
    failed = False
    with tempfile.TemporaryDirectory(prefix="duragent-hostile-") as tmp:
        rig = HostileRig(Path(tmp)).start()
        sessions: list[str] = []
        try:
            warm = rig.new_session()  # the first turn builds the provider, loads encodings
            _normal_turn(rig, warm)
            print(f"{'attack':32} {'status':>6} {'turn s':>7} {'livez s':>8} {'VmHWM MB':>9} next")
            for name, script in ATTACKS:
                sid = rig.new_session()
                sessions.append(sid)
                rig.script(*script())
                with LivenessProbe(rig.url) as probe:
                    started = time.monotonic()
                    status = rig.send(sid, "go").status_code
                    took = time.monotonic() - started
                with LivenessProbe(rig.url) as after:
                    ok = _normal_turn(rig, sid)
                worst = max(probe.worst, after.worst)
                peak = peak_rss_bytes(rig.server_pid)
                bad = status != 200 or not ok or worst >= LIVE_SECONDS
                failed |= bad or peak > MEMORY_BYTES
                print(
                    f"{name:32} {status:>6} {took:>7.2f} {worst:>8.3f} "
                    f"{peak / 2**20:>9.0f} {'ok' if ok else 'FAILED'}"
                )
            rig.kill_server()
            rig.start_server()
            with LivenessProbe(rig.url) as probe:
                answered = sum(_normal_turn(rig, sid) for sid in sessions)
            failed |= answered != len(sessions) or probe.worst >= LIVE_SECONDS
            print(
                f"after SIGKILL + restart: {answered}/{len(sessions)} sessions answered, "
                f"/livez worst {probe.worst:.3f} s, VmHWM {peak_rss_bytes(rig.server_pid) >> 20} MB"
            )
        finally:
            rig.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
