"""A kill campaign: DM chats keep talking while the gateway's child is SIGKILLed again and again.

Six chats write closed-loop (the next message once the last was answered), each message
carrying a token the model's reply repeats. Four times, at moments drawn from a seeded random
generator while replies are in flight, the current child is killed with SIGKILL; the
supervisor starts a new one and the chats go on. As a platform would, the test sends again
what a dead gateway had not yet handed to duragent (its events not yet in the pipe); what was
in the pipe reaches duragent anyway, and a message sent twice is answered once (the runner
de-duplicates by message id).

Checked on what the "platform" saw (every ``send_message`` any child received):

- every message answered, none missing;
- answered once: one ``request_id`` per token. The same command seen again by the next child
  (same ``request_id``: the dying child took it but never confirmed it) is the kit's documented
  "at least once per crash" and counted apart; a second command for one token would be a real
  duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import signal
import time
from collections import defaultdict
from pathlib import Path

from duragent.testing import Reply
from duragent.testing.gateway_control import FakeChild, message
from duragent.testing.script import RecordedRequest
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.gateways.external.external_chat import ExternalChat, external_chat
from tests.polling import eventually

CHATS = 6
PER_CHAT = 8
KILLS = 4
TOKEN = re.compile(r"#c\d+n\d+#")


def echo(request: RecordedRequest) -> Reply:
    users = [m for m in request.json.get("messages", []) if m.get("role") == "user"]
    return Reply(text=f"re: {users[-1]['content'] if users else ''}")


def answers(chat: ExternalChat) -> dict[str, set[str]]:
    """Token → the request ids of every send_message carrying it, across all children."""
    found: dict[str, set[str]] = defaultdict(set)
    for child in chat.control.children:
        for command in child.of_type("send_message"):
            for token in TOKEN.findall(str(command.get("content", ""))):
                found[token].add(str(command["request_id"]))
    return found


async def test_every_message_is_answered_once_while_the_child_is_killed(tmp_path: Path) -> None:
    rng = random.Random(17)
    async with external_chat(tmp_path, ChatSetup(), responder=echo) as chat:
        sent: dict[str, FakeChild] = {}  # token → the child it was handed to
        kills = 0

        async def say(n: int, k: int) -> None:
            token = f"#c{n}n{k}#"
            child = chat.control.children[-1]
            sent[token] = child
            event = message(str(9000 + n), f"note {token}", message_id=token, sender_id=str(n))
            with contextlib.suppress(ConnectionError):  # already dead: sent again below
                await child.emit(event)

        async def redeliver(dead: FakeChild) -> None:
            for token, child in list(sent.items()):
                if child is dead and token not in dead.emitted and token not in answers(chat):
                    n, k = (int(x) for x in re.findall(r"\d+", token))
                    await say(n, k)

        progress = dict.fromkeys(range(CHATS), 0)
        for n in range(CHATS):
            await say(n, 0)
        total = CHATS * PER_CHAT
        kill_at = sorted(rng.sample(range(4, total - 4), KILLS))  # answers seen before a kill
        deadline = time.monotonic() + 60
        while sum(progress.values()) < total:
            assert time.monotonic() < deadline, f"stalled: {progress} answered per chat"
            done = answers(chat)
            for n, k in progress.items():
                if k < PER_CHAT and f"#c{n}n{k}#" in done:
                    progress[n] = k + 1
                    if k + 1 < PER_CHAT:
                        await say(n, k + 1)
            if kills < KILLS and sum(progress.values()) >= kill_at[kills]:
                dead = chat.control.children[-1]
                os.kill(dead.pid, signal.SIGKILL)
                kills += 1
                assert await eventually(dead.closed.is_set)
                await chat.control.child(len(chat.control.children))
                await redeliver(dead)
            await asyncio.sleep(0.01)
        await chat.settle()
        found = answers(chat)

    tokens = [f"#c{n}n{k}#" for n in range(CHATS) for k in range(PER_CHAT)]
    assert kills == KILLS
    assert [t for t in tokens if t not in found] == []  # none lost
    twice = {t: ids for t, ids in found.items() if len(ids) > 1}
    assert twice == {}  # no real duplicate: one command per message
    assert len(chat.control.children) == KILLS + 1
