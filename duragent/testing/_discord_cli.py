"""``python -m duragent.testing.fake_discord``: the fake Discord in a process of its own.

For benchmarks (the fake must not share the measured process's CPU) and for reproducing a
test by hand with curl against the ``/_fake`` endpoints. The first line on stdout is
``listening on http://HOST:PORT`` (read it to learn the port chosen with ``--port 0``); point
``gateways.discord.base_url`` at that address.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Sequence

from duragent.testing.fake_discord import DEFAULT_DISCORD_TOKEN, FakeDiscord

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m duragent.testing.fake_discord",
        description="Fake Discord (gateway websocket + REST) for gateways.discord.base_url.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--token", default=DEFAULT_DISCORD_TOKEN, help="the only token accepted")
    parser.add_argument(
        "--keep-calls",
        type=int,
        default=None,
        metavar="N",
        help="keep only the latest N REST calls in memory (GET /_fake/calls); default all",
    )
    args = parser.parse_args(argv)
    fake = FakeDiscord(args.token, host=args.host, port=args.port, keep_calls=args.keep_calls)

    async def run() -> None:
        await fake.start()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, fake.request_stop)
        print(f"listening on {fake.url}", flush=True)
        print(
            f"push: curl -X POST {fake.url}/_fake/message "
            """-d '{"channel_id": 1, "content": "hi"}'"""
        )
        print(f"read: curl {fake.url}/_fake/calls?since=0", flush=True)
        await fake.serve_until_stopped()

    asyncio.run(run())
    return 0
