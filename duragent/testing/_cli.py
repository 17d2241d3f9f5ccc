"""``python -m duragent.testing.fake_llm_server``: the fake LLM server in its own process.

Crash and soak tests kill the process under test; the LLM it talks to must survive that, so it
runs here, in another process. The first line on stdout is ``listening on http://HOST:PORT``
(read it to learn the port chosen with ``--port 0``). ``--record`` appends every request as a
JSON line, so the parent can check what was sent even after the child was killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import Sequence
from pathlib import Path

from duragent.testing.fake_llm_server import ScriptedLLMServer
from duragent.testing.script import RecordedRequest, Reply, Responder, load_script

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script until SIGINT/SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m duragent.testing.fake_llm_server",
        description="Scripted fake OpenAI/Anthropic API server for tests.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON file with a list of script items")
    parser.add_argument("--reply-text", help="answer this text once the script is exhausted")
    parser.add_argument("--record", type=Path, help="append each request to this JSONL file")
    parser.add_argument(
        "--keep-requests",
        type=int,
        default=None,
        metavar="N",
        help="keep only the latest N requests in memory (GET /_fake/requests); default all",
    )
    args = parser.parse_args(argv)

    script = load_script(args.script) if args.script else []
    responder: Responder | None = None
    if args.reply_text is not None:
        fixed = Reply(text=args.reply_text)

        def responder(_request: RecordedRequest) -> Reply:
            return fixed

    record_path: Path | None = args.record

    def record(request: RecordedRequest) -> None:
        if record_path is not None:
            with record_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(request.to_json()) + "\n")

    server = ScriptedLLMServer(
        script,
        responder=responder,
        on_request=record,
        host=args.host,
        port=args.port,
        keep_requests=args.keep_requests,
    )

    async def run() -> None:
        await server.start()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, server.request_stop)
        print(f"listening on {server.base_url}", flush=True)
        await server.serve_until_stopped()

    asyncio.run(run())
    return 0
