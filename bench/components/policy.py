"""Policy decision cost for bash commands of 1 KiB, 64 KiB and 1 MiB, and event-loop stalls.

Prints one table. Each command is a realistic shell line repeated to size: a pipeline of
allowed ``echo``/``ls``/``cat`` commands with quotes, ``$x`` and ``$( … )`` substitutions, so
the splitter and the grammar see every construct they model; the last row is a 60 KiB
here-document full of ``$HOME``, which tree-sitter-bash parses in quadratic time.

"decide" is the median wall time of ``Policy.decide`` (mode ask, globs that allow every
segment), called directly. "stall" is the longest gap seen by a 1 ms ticker on the event loop
while the decision runs as the loop runs it (``asyncio.to_thread``): what every other session
on the server waits at worst.

    .venv/bin/python -m bench.components.policy            # full run (a few seconds)
    .venv/bin/python -m bench.components.policy --quick    # one repetition per size
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from duragent.tools.policy import Policy

UNIT = "echo 'a b' \"$HOME x\" $(ls -la) | cat -n && ls -la /tmp; "
SIZES = (("1 KiB", 1024), ("64 KiB", 64 * 1024 - 64), ("1 MiB", 1024 * 1024))
HEREDOC = "cat <<E\n" + "$HOME " * 10_000 + "\nE"  # 60 KiB: tree-sitter is slow on these
POLICY = Policy(mode="ask", allow=("bash:echo *", "bash:ls *", "bash:cat *"))


def command_of(size: int) -> str:
    """A command of at most ``size`` bytes made of whole units (so it stays well-formed)."""
    return (UNIT * (size // len(UNIT))).strip()


def time_decide(command: str, repeat: int) -> tuple[float, str]:
    """Median seconds of ``decide`` over ``repeat`` calls, and the decision."""
    times = []
    decision = ""
    for _ in range(repeat):
        start = time.perf_counter()
        verdict = POLICY.decide("bash", command)
        times.append(time.perf_counter() - start)
        decision = verdict.decision.value
    return statistics.median(times), decision


async def worst_stall(command: str) -> float:
    """Longest gap between ticks of a 1 ms ticker while ``decide`` runs in a thread."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.to_thread(POLICY.decide, "bash", command)
    done.set()
    await tick
    return max(gaps, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition per size")
    args = parser.parse_args()
    repeat = 1 if args.quick else 5
    print(f"{'command':>8}  {'bytes':>9}  {'decide':>10}  {'stall':>9}  decision")
    cases = [(label, command_of(size)) for label, size in SIZES] + [("here-doc", HEREDOC)]
    for label, command in cases:
        seconds, decision = time_decide(command, repeat)
        stall = asyncio.run(worst_stall(command))
        print(
            f"{label:>8}  {len(command):>9}  {seconds * 1000:>8.1f}ms  "
            f"{stall * 1000:>7.1f}ms  {decision}"
        )


if __name__ == "__main__":
    main()
