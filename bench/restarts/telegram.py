"""Telegram restart campaign, long: 1,000 messages, 50 chats, `duragent serve` SIGKILLed 5+ times.

Same machinery as ``tests/gateways/telegram/test_restart_campaign.py``
(``duragent.testing.telegram_campaign``, whose docstring defines every check): the
fake Telegram and the group agent's model run in this process, ``duragent serve`` in a child
that is killed at random moments (chosen by progress, plus a random delay) and started again
at once. DMs (offline model) are closed-loop, every fifth a ``!call bash`` that asks for
approval (pressed only after the next kill); groups send mentions up to three ahead, each after
two lines of chatter, through a ``sequential`` queue.

    .venv/bin/python -m bench.restarts.telegram --messages 1000 --chats 50 --kills 5
    .venv/bin/python -m bench.restarts.telegram --quick

Exit status 1 when any check failed; the problems are listed under the table. ``--keep DIR``
keeps the workspace, ``calls.jsonl`` (every Bot API call) and each process's log.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from duragent.testing.campaign_verdict import print_report, result_rows
from duragent.testing.telegram_campaign import run_campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="100 messages, 10 chats, 2 kills")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR")
    args = parser.parse_args()
    # the fake Telegram sees the killed process's connections drop: expected, not news
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    if args.quick:
        args.messages, args.chats, args.kills = 100, 10, 2
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(
        run_campaign(
            messages=args.messages,
            chats=args.chats,
            kills=args.kills,
            seed=args.seed,
            workdir=args.keep,
        )
    )
    return 0 if print_report(result_rows(result), result.problems, result.ok) else 1


if __name__ == "__main__":
    sys.exit(main())
