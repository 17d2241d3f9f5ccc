"""``python -m duragent.testing.fake_telegram``: the fake Telegram Bot API in its own process.

A restart campaign kills the bot process; the Telegram it talks to must survive that, keeping
the unconfirmed updates and the record of every call, so it runs here. A person reproduces a
test the same way, with curl against the ``/_fake`` endpoints. The first line on stdout is
``listening on http://HOST:PORT`` (read it to learn the port chosen with ``--port 0``).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Sequence

from duragent.testing.fake_telegram import DEFAULT_TOKEN, FakeTelegram

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m duragent.testing.fake_telegram",
        description="Fake Telegram Bot API server for tests (python-telegram-bot's base_url).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--token", default=DEFAULT_TOKEN, help="the only bot token accepted")
    parser.add_argument("--bot-username", default="duragent_test_bot")
    parser.add_argument(
        "--strict-chats",
        action="store_true",
        help='answer "chat not found" to sends into chats no update came from',
    )
    parser.add_argument(
        "--keep-calls",
        type=int,
        default=None,
        metavar="N",
        help="keep only the latest N calls in memory (GET /_fake/calls); default all",
    )
    args = parser.parse_args(argv)
    fake = FakeTelegram(
        args.token,
        bot_username=args.bot_username,
        host=args.host,
        port=args.port,
        strict_chats=args.strict_chats,
        keep_calls=args.keep_calls,
    )

    async def run() -> None:
        await fake.start()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, fake.request_stop)
        print(f"listening on {fake.url}", flush=True)
        print(f"bot API: {fake.base_url}{fake.token}/<method>  (PTB base_url={fake.base_url})")
        telegram = f"{{base_url: {fake.url}, bot_token: {fake.token}}}"
        print(f"duragent.yaml: gateways: {{telegram: {telegram}}}")
        print(
            f"""push:    curl -X POST {fake.url}/_fake/message -d '{{"chat_id":1,"text":"hi"}}'"""
        )
        print(f"read:    curl {fake.url}/_fake/sent?chat_id=1", flush=True)
        await fake.serve_until_stopped()

    asyncio.run(run())
    return 0
