"""A month of strangers: one bot serving a busy public group and DMs it does not trust.

The simulated year's engine (``bench/year``: the fake Telegram with its faults, the scripted
model enforcing its windows, the simulated clock, SIGKILLs of ``duragent serve``, the verdict
on what users saw) run for a month as a ``World`` (``bench/strangers/world.py``) with a crowd:
2 owners, 50 members writing the groups' mentions (some asking for tool calls, approved by
their author), 5 blocked members, 5 hostile members trying every class of attack at random
moments (``attacks.py``), strangers opening DMs to a pairing agent and an allow-list agent;
photos, voice notes and documents in the DMs (documents sent back), some replies streamed
into the chat, a pinned and an early fact asked for at each group's end; a fake Discord
(a guild channel and DMs) served by the same process; the bot tokens and the model key only
in the serving process's environment, tools in bubblewrap. It checks the year's claims (0 lost,
0 answered twice, 0 over the window…) and the month's: 0 escalations, 0 secrets leaked, media
intact (``judge.py``).

    .venv/bin/python -m bench.strangers --quick      # a simulated day, two kills: ~1 minute
    .venv/bin/python -m bench.strangers              # the month: 10,000 messages, 20 kills

``--cluster`` runs the second half on PostgreSQL with two nodes (``bench/year/switch.py``:
at the midpoint the node is stopped, ``duragent store copy`` moves the workspace, nodes a
and b serve the rest; half the kills come after, on the Telegram poller or a node at random,
half of those down past the lease so the other node takes over). It needs PostgreSQL:
``--dsn`` (default ``$DURAGENT_BENCH_POSTGRES_DSN``, else the local server). Without it the
whole month runs on files. Both pass (``bench/README.md``).

Prints the table (and PASS or FAIL), writes ``--json`` (default ``strangers.json``) and the
picture ``--png`` (default ``strangers.png``; the attempts marked along the top). Exit status
1 when any check failed. Needs ``bwrap`` (Debian's ``bubblewrap``): tools run confined, as a
deployment that lets strangers talk to its tools must run them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from bench.strangers.run import QUICK, StrangersConfig, run_strangers
from bench.year.report import rows, save
from bench.year.switch import DEFAULT_DSN, ClusterPlan
from duragent.testing.campaign_verdict import print_report


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.strangers", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--chats", type=int, default=60)
    parser.add_argument("--group-every", type=int, default=20, help="one chat in N is a group")
    parser.add_argument("--crashes", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=240, help="hostile, blocked, strangers")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a simulated day, two kills")
    parser.add_argument("--json", type=Path, default=Path("strangers.json"))
    parser.add_argument("--png", type=Path, default=Path("strangers.png"))
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    parser.add_argument("--cluster", action="store_true", help="the 2nd half: 2 nodes, PostgreSQL")
    parser.add_argument("--dsn", default=DEFAULT_DSN, help="PostgreSQL for the second half")
    parser.add_argument("--lease", type=float, default=3.0, help="store.lease_seconds")
    parser.add_argument("--keep-schema", action="store_true", help="do not drop it after")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bench.strangers needs bwrap: apt-get install bubblewrap", file=sys.stderr)
        return 2
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    base = (
        asdict(QUICK)
        if args.quick
        else {
            "days": args.days,
            "messages": args.messages,
            "chats": args.chats,
            "group_every": args.group_every,
            "kills": args.crashes,
            "attempts": args.attempts,
        }
    )
    cluster = None
    if args.cluster:
        cluster = ClusterPlan(lease_seconds=args.lease, dsn=args.dsn, keep=args.keep_schema)
    config = StrangersConfig(
        **{**base, "seed": args.seed, "workdir": args.keep, "cluster": cluster}
    )
    result = asyncio.run(run_strangers(config))
    ok = print_report(rows(result), result.problems, result.ok)
    save(result, args.json, None if args.no_png else args.png)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
