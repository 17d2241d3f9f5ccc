"""Discord restart campaign, long: 1,000 messages, 50 chats, `duragent serve` SIGKILLed 5+ times.

Same machinery as ``tests/gateways/discord/test_restart_campaign.py``
(``duragent.testing.discord_campaign``, whose docstring defines "accepted" on a
platform that sends each message once; the checks are the Telegram campaign's): the fake
Discord and the group agent's model run in this process, ``duragent serve`` in a child that is
killed at random moments and started again at once while the chats go on writing. Messages
written while no bot was connected, and messages in flight to a killed process that had not
recorded them, are counted apart ("not delivered"), never as lost.

    .venv/bin/python -m bench.restarts.discord --messages 1000 --chats 50 --kills 5
    .venv/bin/python -m bench.restarts.discord --quick

Exit status 1 when any check failed; the problems are listed under the table. ``--keep DIR``
keeps the workspace, ``calls.jsonl`` (every REST call) and each process's log.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from duragent.testing.campaign_verdict import print_report, result_rows
from duragent.testing.discord_campaign import run_campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="100 messages, 10 chats, 2 kills")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    args = parser.parse_args()
    # the fake sees the killed process's connections drop: expected, not news
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    logging.getLogger("aiohttp.web_protocol").setLevel(logging.CRITICAL)
    if args.quick:
        args.messages, args.chats, args.kills = 100, 10, 2
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    result, repressed = asyncio.run(
        run_campaign(
            messages=args.messages,
            chats=args.chats,
            kills=args.kills,
            seed=args.seed,
            workdir=args.keep,
        )
    )
    rows = result_rows(result)
    rows.insert(-1, ("approvals pressed again (press died with a process)", f"{repressed}"))
    return 0 if print_report(rows, result.problems, result.ok) else 1


if __name__ == "__main__":
    sys.exit(main())
