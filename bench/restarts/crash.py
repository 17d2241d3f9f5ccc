"""Crash campaign: SIGKILL a session worker at random moments, restart it, check nothing is lost.

Same machinery as ``tests/session/test_crash_recovery.py`` (``tests/session/crash_worker.py``),
run for longer. Each cycle starts a worker on the same sessions directory; the worker recovers
every session, then drives several sessions concurrently (user messages, tool rounds with
batched results, final replies, status changes, snapshots and compactions) and acknowledges each
durable write in an fsync'd ack file until it is killed. A quarter of the turns run a real
``bash`` tool through the turn runner (its command writes a marker file first, then sleeps), so
kills land while tools run. Some kills land during recovery. After each kill no process of any
tool group may survive; at the end every session is recovered in-process and checked against
the ack file, and every tool that started must have its call on disk and exactly one result.

    .venv/bin/python -m bench.restarts.crash --cycles 300

The worker and its checks are the suite's (``tests/session/crash_worker.py``): run it from the
project root, where ``tests`` imports.

Exit status 1 when anything acknowledged was lost or duplicated, or any check failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from duragent.testing.campaign_verdict import table
from tests.session.crash_worker import (
    PHASES,
    CampaignResult,
    WorkerFailedError,
    run_campaign,
)


def report(result: CampaignResult) -> str:
    v = result.verdict
    p50, p99 = result.recovery_quantiles()
    phases = result.kill_phases
    rows = [
        ("cycles", f"{result.cycles}"),
        ("kills (SIGKILL)", f"{result.kills}"),
        ("  probed first (SIGSTOP, then read)", f"{result.kills - phases.get('not probed', 0)}"),
        *(
            (f"    some thread inside {name}", f"{phases.get(name, 0)}")
            for name in PHASES
            if name != "tool"
        ),
        ("    a tool process running", f"{phases.get('tool', 0)}"),
        ("    no thread inside a durable step", f"{phases.get('between steps', 0)}"),
        ("  plain SIGKILL (not probed)", f"{phases.get('not probed', 0)}"),
        ("sessions (acknowledged)", f"{v.sessions}"),
        ("sessions created, kill before ack", f"{v.unacked_sessions}"),
        ("events in the logs", f"{v.events}"),
        ("messages acknowledged", f"{v.acknowledged}"),
        ("lost (must be 0)", f"{len(v.lost)}"),
        ("duplicated (must be 0)", f"{len(v.duplicated)}"),
        ("other problems (must be 0)", f"{len(v.problems)}"),
        ("logged errors (must be 0)", f"{len(result.logged_errors)}"),
        ("redeliveries answered as duplicate", f"{v.redeliveries}"),
        ("interrupted tool calls repaired", f"{v.interrupted_results}"),
        ("tools started (marker files)", f"{v.tools_started}"),
        ("  cut by a kill (interrupted result)", f"{v.tools_interrupted}"),
        ("  started without a call on disk (must be 0)", f"{sum('no call' in x for x in v.lost)}"),
        ("  processes outliving a kill (must be 0)", f"{len(result.tool_survivors)}"),
        ("torn lines left by kills", f"{v.torn_lines}"),
        ("recoveries that saw a torn tail", f"{result.torn_tail_warnings}"),
        ("temp files left by kills", f"{v.tmp_files}"),
        ("recovery time p50 (ms)", f"{p50:.1f}"),
        ("recovery time p99 (ms)", f"{p99:.1f}"),
        ("wall time (s)", f"{result.seconds:.1f}"),
    ]
    return table(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=5, help="sessions driven at least")
    parser.add_argument("--min-delay", type=float, default=0.01, help="seconds before a kill")
    parser.add_argument("--max-delay", type=float, default=0.3, help="seconds before a kill")
    parser.add_argument("--workdir", type=Path, default=None, help="kept; default: a temp dir")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="duragent-crash-"))
    workdir.mkdir(parents=True, exist_ok=True)

    done = 0

    def progress(cycle: int, result: Any) -> None:
        nonlocal done
        done = cycle + 1
        if (cycle + 1) % 25 == 0:
            print(f"  {cycle + 1}/{args.cycles} cycles", file=sys.stderr, flush=True)

    try:
        result = run_campaign(
            workdir,
            cycles=args.cycles,
            seed=args.seed,
            sessions=args.sessions,
            min_delay=args.min_delay,
            max_delay=args.max_delay,
            progress=progress,
        )
    except WorkerFailedError as exc:
        print(f"a worker failed by itself after {done} cycles: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(report(result))
    if not result.ok:
        print(result.verdict.summary(), file=sys.stderr)
        print("\n".join(result.tool_survivors[:20]), file=sys.stderr)
        print("\n".join(result.logged_errors[:20]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
