"""Test infrastructure shipped with duragent: fake LLM and Telegram servers on real sockets.

Like httpx's ``MockTransport``, this lives in the package (not under ``tests/``) so the test
suite, benchmarks and crash tests in other processes can all drive the real providers against
the same fake, over real HTTP, without network access or API keys::

    from duragent.testing import Fault, Reply, ScriptedLLMServer, ToolCallReply

    async with ScriptedLLMServer(
        [
            Fault.rate_limited(retry_after=2),
            Reply(text="It is sunny.", tool_calls=[ToolCallReply(name="weather")]),
        ]
    ) as server:
        ...  # point a provider at server.openai_base_url or server.anthropic_base_url
        body = server.requests[-1].json

- ``Reply``: a 200 answer (text, tool calls, usage) with optional transport faults (``delay``,
  ``chunk_delay``, ``malformed``, ``cut_after``); rendered as OpenAI or Anthropic JSON/SSE
  depending on the endpoint called and on the request's ``stream`` flag.
- ``Fault``: an HTTP error (429 + Retry-After, 5xx, 529, 401/403, 400, context overflow) with
  the body in the called API's error format.
- ``RecordedRequest``: what the client sent (method, path, headers, parsed JSON body).
- A ``responder`` function computes answers from requests once the queued script runs out.

``FakeTelegram`` is a fake Telegram Bot API for python-telegram-bot's ``base_url`` (long
polling, sends and edits with Telegram's validation, button presses), scripted with
``FaultRule`` (429 + retry_after, parse errors, 5xx, delays, dropped connections); see
``duragent.testing.fake_telegram``. ``FakeDiscord`` is a fake Discord (gateway websocket and
REST) for discord.py; see ``duragent.testing.fake_discord``.

The restart campaigns drive a real ``duragent serve`` (``serve_process.ServeProcess``) through
these fakes while SIGKILLing it, and judge what users saw: ``telegram_campaign``,
``discord_campaign`` and ``external_campaign``, on ``campaign_loop`` and ``campaign_verdict``.
The suite runs them short; ``bench/restarts`` and the simulated year (``bench/year``) long.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from duragent.testing.script import (
    Fault,
    RecordedRequest,
    Reply,
    Responder,
    ScriptItem,
    ToolCallReply,
    Wire,
    item_from_json,
    item_to_json,
    load_script,
)
from duragent.testing.telegram_faults import FaultRule

if TYPE_CHECKING:
    from duragent.testing.fake_discord import FakeDiscord
    from duragent.testing.fake_llm_server import EXHAUSTED_STATUS, ScriptedLLMServer
    from duragent.testing.fake_telegram import FakeTelegram

_LAZY = {
    "EXHAUSTED_STATUS": "duragent.testing.fake_llm_server",
    "ScriptedLLMServer": "duragent.testing.fake_llm_server",
    "FakeTelegram": "duragent.testing.fake_telegram",
    "FakeDiscord": "duragent.testing.fake_discord",
}

__all__ = [
    "EXHAUSTED_STATUS",
    "FakeDiscord",
    "FakeTelegram",
    "Fault",
    "FaultRule",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptItem",
    "ScriptedLLMServer",
    "ToolCallReply",
    "Wire",
    "item_from_json",
    "item_to_json",
    "load_script",
]


def __getattr__(name: str) -> Any:
    """Import the server modules on first use.

    Importing them here eagerly would make ``python -m duragent.testing.fake_llm_server`` (or
    ``fake_telegram``) run a module that is already in ``sys.modules`` (runpy warns, and fails
    under ``-W error``).
    """
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
