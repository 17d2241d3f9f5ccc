"""External gateway restart campaign, long: `duragent serve` SIGKILLed behind a gateway plugin.

Same machinery as ``tests/gateways/external/test_restart_campaign.py``
(``duragent.testing.external_campaign``, whose docstring defines what the platform
does; the checks are the Telegram campaign's): this process plays the chat platform behind
the fake gateway (``duragent.testing.fake_gateway``), which runs as the child of a
``duragent serve`` that is killed at random moments and started again at once while the
chats go on writing. Run both modes:

- ``--mode ack``: the gateway lists the ``ack`` capability; the platform sends again what
  duragent never acknowledged. Nothing may be lost.
- ``--mode reference``: a gateway written for the reference. Messages still in the pipe at
  the kill are counted apart ("not delivered: in flight to a killed process").

    .venv/bin/python -m bench.restarts.external --messages 1000 --chats 50 --kills 5
    .venv/bin/python -m bench.restarts.external --quick

Exit status 1 when any check of any mode failed; the problems are listed under each table.
``--keep DIR`` keeps each mode's workspace, ``commands.jsonl`` and each process's log.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from duragent.testing.campaign_verdict import print_report, result_rows
from duragent.testing.external_campaign import run_campaign


def run_mode(args: argparse.Namespace, ack: bool) -> bool:
    workdir = None
    if args.keep is not None:
        workdir = args.keep / ("ack" if ack else "reference")
        workdir.mkdir(parents=True, exist_ok=True)
    result, repressed, resent = asyncio.run(
        run_campaign(
            messages=args.messages,
            chats=args.chats,
            kills=args.kills,
            ack=ack,
            seed=args.seed,
            workdir=workdir,
        )
    )
    rows = result_rows(result)
    rows.insert(-1, ("messages the platform sent again to a new child", f"{resent}"))
    rows.insert(-1, ("approvals pressed again (press died with a process)", f"{repressed}"))
    ok = result.ok and (not ack or result.lost_in_flight == 0)
    print(f"\nmode: {'ack' if ack else 'reference (no ack)'}")
    return print_report(rows, result.problems, ok)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=("ack", "reference", "both"), default="both")
    parser.add_argument("--quick", action="store_true", help="100 messages, 10 chats, 2 kills")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.chats, args.kills = 100, 10, 2
    modes = {"ack": [True], "reference": [False], "both": [True, False]}[args.mode]
    results = [run_mode(args, ack) for ack in modes]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
