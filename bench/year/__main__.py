"""A year in an hour: a simulated year of a busy deployment against real components.

Telegram through python-telegram-bot against the fake Bot API (429s, 5xx, dropped
connections; updates dated by the simulated clock), ``/status`` and ``/reset``, tool calls with
and without approval (some 200 KB, read back in part through ``tool_output``), the memory
tool, declared schedules (daily at 02:30 in New York and Berlin across DST, a task every few
hours, another every 15 minutes for ``--pulse-days``) on a simulated clock, the scripted model
over real HTTP enforcing 8K and 32K windows with a real 400, and ``duragent serve`` SIGKILLed
at random moments and restarted. The serving process lives on the simulated calendar
(``duragent.core.clock``): event stamps, session TTL (a quarter of the run: one DM in ten falls
silent and must lose its session, no other chat may), the memory tool's "today" and
saved-output retention all read it. 50 groups and 200 DMs (``--group-every 5``).
``bench/year/`` holds the pieces (``run.py`` runs one year; ``campaign.py`` drives it on the
Telegram restart campaign of ``duragent.testing.telegram_campaign``);
``specs/202611241415.year-in-an-hour.md`` the decisions.

    .venv/bin/python -m bench.year --quick                # a simulated week: ~1 minute
    .venv/bin/python -m bench.year --days 365 --messages 100000 --chats 250 --crashes 50

Prints the table (and PASS or FAIL), writes ``--json`` (default ``year.json``) and the
picture ``--png`` (default ``year.png``; needs matplotlib: ``pip install -e '.[bench]'``).
Exit status 1 when any check failed. ``--keep DIR`` keeps the workspace, the logs and the
fake Telegram's record (``calls.jsonl``: every Bot API call but ``getUpdates``) and, when the
run stalled, ``stall.json`` (each chat still waiting, and for what).

``--cluster`` runs the second half on PostgreSQL with two nodes (``switch.py``): halfway, the
one node is stopped, ``duragent store copy --from file --to postgres`` copies its store into
a fresh schema of ``--dsn`` (default ``DURAGENT_BENCH_POSTGRES_DSN``, else the local server),
and nodes a and b serve the rest with leader leases of ``--lease`` seconds (default 3); the
kills after it take the node that polls Telegram or a random one, some kept down past the
lease so the other takes over (``cluster_kills.py``). The table then adds the switch (its
day, the copy's seconds and output, the time down), the second half's victims, the replies
and polls of each node and the database's size. The schema is dropped after the run unless
``--keep-schema`` (its name is in the table).

    .venv/bin/python -m bench.year --quick --cluster --lease 2
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from bench.year.report import rows, save
from bench.year.run import YearConfig, run_year
from bench.year.switch import DEFAULT_DSN, ClusterPlan
from duragent.testing.campaign_verdict import print_report

QUICK = {"days": 7.0, "messages": 400, "chats": 24, "crashes": 3}


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.year", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--days", type=float, default=365.0)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--chats", type=int, default=250)
    parser.add_argument(
        "--group-every", type=int, default=5, help="one chat in N is a group (5: 50 of 250)"
    )
    parser.add_argument("--crashes", type=int, default=50)
    parser.add_argument("--every-hours", type=float, default=4.0, help="the recurring task")
    parser.add_argument(
        "--pulse-days", type=int, default=7, help="days of a task every 15 minutes (0: none)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK}")
    parser.add_argument("--json", type=Path, default=Path("year.json"))
    parser.add_argument("--png", type=Path, default=Path("year.png"))
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    parser.add_argument(
        "--cluster", action="store_true", help="the second half on PostgreSQL with two nodes"
    )
    parser.add_argument("--dsn", default=DEFAULT_DSN, help="the database of --cluster")
    parser.add_argument(
        "--lease", type=float, default=3.0, metavar="SECONDS", help="the nodes' leader leases"
    )
    parser.add_argument(
        "--keep-schema", action="store_true", help="keep the --cluster run's schema to read it"
    )
    args = parser.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # killed clients' sockets
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    config = YearConfig(
        days=args.days,
        messages=args.messages,
        chats=args.chats,
        group_every=args.group_every,
        kills=args.crashes,
        seed=args.seed,
        every_seconds=int(args.every_hours * 3600),
        pulse_days=args.pulse_days,
        workdir=args.keep,
        cluster=ClusterPlan(lease_seconds=args.lease, dsn=args.dsn, keep=args.keep_schema)
        if args.cluster
        else None,
    )
    result = asyncio.run(run_year(config))
    ok = print_report(rows(result), result.problems, result.ok)
    save(result, args.json, None if args.no_png else args.png)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
