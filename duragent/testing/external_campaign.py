r"""The external gateway restart campaign: chats keep writing while ``duragent serve`` is SIGKILLed.

Shared by ``tests/gateways/external/test_restart_campaign.py`` (short) and
``bench/restarts/external.py`` (long). The plan, the group model and the verdict are the
Telegram campaign's (``campaign_verdict``; ``telegram_campaign`` defines each check), and so
are the two agents (``campaign_workspace``).
``duragent serve`` runs in a child process with the fake gateway (``duragent.testing.
fake_gateway``) as *its* child; this process plays the chat platform behind the gateway,
through the fake's control socket. A SIGKILL of ``serve`` takes its gateway child with it
(the parent-death rules); the restarted ``serve`` starts a new one.

What the platform does with a message depends on the gateway, as it would with a real one:

- **``ack`` mode** (the gateway lists our ``ack`` capability): the platform keeps each message
  until duragent acknowledges it (``ack_message``, sent once the message is recorded) and
  sends every unacknowledged one again to the next gateway child. Nothing may be lost:
  every message answered exactly once (a message sent twice is answered once: duragent keeps
  the platform's message ids).
- **reference mode** (a gateway written for the reference: no ``ack``): the gateway lets a
  message go once it wrote it to its stdout. A message still in the pipe when ``serve`` was
  killed, and so never recorded (the store, read after the restart, says so), is **not
  delivered (in flight to a killed process)**: counted apart, as Discord's, because the
  protocol gives such a gateway no way to know. A message the gateway never wrote (it died
  first) is sent again to the next child, as a platform that was never confirmed does.

While no gateway child is connected the chats wait (the platform holds what they write).
Approvals cross a restart on purpose: while kills remain, a prompt is pressed only after the
next kill; a press the killed process never answered (``answer_callback_query``) is pressed
again after the restart, as its user would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.testing import ScriptedLLMServer
from duragent.testing.campaign_loop import CampaignLoop
from duragent.testing.campaign_verdict import (
    GROUP_WINDOW,
    IN_FLIGHT,
    CampaignMessage,
    CampaignResult,
    Chat,
    SentText,
    answer_tokens,
    group_model,
    mark_answers,
    mark_chatter,
    plan,
    verdict,
)
from duragent.testing.campaign_workspace import recorded_message_ids, write_campaign_agents
from duragent.testing.gateway_control import FakeChild, GatewayControl, message
from duragent.testing.serve_process import ServeProcess

__all__ = ["run_campaign", "write_campaign_workspace"]

GATEWAY = "fake"
DRAIN_SECONDS = 0.3
"""After a kill, before the next start: the control socket reports what the dead child had."""
WRITER = "700"
"""Who writes every answerable group message (and so may approve its tool call)."""
CHATTERERS = [str(500 + n) for n in range(4)]

_CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  external:
    - name: {gateway}
      command: {python}
      args: {args}
routes:
  - match: {{chat_type: dm}}
    agent: dm
  - match: {{chat_type: group}}
    agent: group
"""


def write_campaign_workspace(root: Path, *, args: list[str], llm_url: str) -> Path:
    """The campaign's workspace under ``root`` (the fake gateway run with ``args``)."""
    config = root / "duragent.yaml"
    body = _CONFIG.format(gateway=GATEWAY, python=sys.executable, args=json.dumps(args))
    config.write_text(body)
    write_campaign_agents(root, llm_url)
    return config


@dataclass
class ExternalDelivery:
    """The platform's record of one message (answerable or chatter)."""

    message_id: str
    event: dict[str, Any]
    child: FakeChild


class _ExternalCampaign(CampaignLoop):
    def __init__(
        self,
        control: GatewayControl,
        serve: ServeProcess,
        root: Path,
        chats: list[Chat],
        kills: int,
        rng: random.Random,
        *,
        ack: bool,
        stall_seconds: float,
    ) -> None:
        total = sum(len(c.messages) for c in chats)
        lo, hi = max(1, total // 20), max(2, total * 3 // 4)
        super().__init__(sorted(rng.sample(range(lo, hi), kills)), stall_seconds)
        self.control = control
        self.serve = serve
        self.root = root
        self.plan = chats
        self.by_id = {c.chat_id: c for c in chats}
        self.rng = rng
        self.ack = ack
        self.total = total
        self.kill_times: list[float] = []
        self.read_upto: dict[int, int] = {}
        """Per child (pid): how many of its commands ``read_sends`` has read."""
        self.sent: list[SentText] = []
        self.after_restart: list[CampaignMessage] = []
        self.deliveries: dict[str, ExternalDelivery] = {}
        """Per token (answerable messages and chatter lines)."""
        self.presses: dict[str, tuple[FakeChild, str]] = {}
        """Per token: the child its last press went to, and the press's callback id."""
        self.child: FakeChild | None = None
        """The connected gateway child (None between a kill and the next start)."""
        self.lifetimes: dict[int, int] = {}
        """Per child (pid): the serving process that started it."""
        self.next_id = 0
        self.resent = 0
        """Messages the platform sent again to a new child (never acknowledged / never taken)."""
        self.presses_repeated = 0

    # -- what the bot sent --------------------------------------------------------------------

    def lifetime(self, child: FakeChild) -> int:
        if child.pid not in self.lifetimes:
            self.lifetimes[child.pid] = self.serve.lifetime_of(child.started)
        return self.lifetimes[child.pid]

    def read_sends(self) -> None:
        for child in self.control.children:
            start = self.read_upto.get(child.pid, 0)
            commands = child.commands[start:]
            self.read_upto[child.pid] = start + len(commands)
            for command, at in zip(commands, child.arrived[start:], strict=True):
                if command.get("type") == "send_message":
                    self.take_send(child, command, at)

    def take_send(self, child: FakeChild, command: dict[str, Any], at: float) -> None:
        chat_id = int(command["chat_id"])
        text = str(command.get("content", ""))
        keyboard = command.get("inline_keyboard")
        self.sent.append(SentText(chat_id, text, at, self.lifetime(child), keyboard is not None))
        chat = self.by_id.get(chat_id)
        if chat is None:
            return
        waiting = {m.token: m for m in chat.messages[: chat.next] if m.answered_at is None}
        if keyboard is not None:
            sends = [c for c in child.commands if c["type"] in ("send_message", "send_media")]
            prompt_id = sends.index(command) + 1  # the fake's message ids: g1, g2… per child
            self.take_prompt(waiting, text, prompt_id, keyboard["rows"][0][0]["callback_data"])
            return
        self.answered += len(mark_answers(list(waiting.values()), text, at))

    def take_prompt(
        self, waiting: dict[str, CampaignMessage], text: str, prompt: int, data: str
    ) -> None:
        for token in answer_tokens(text):
            m = waiting.get(token)
            if m is None:
                continue
            first = m.prompt_id is None
            m.prompts += 1
            m.prompt_id = prompt
            m.prompt_data = data  # Allow Once
            if not first:  # asked again (after a restart): a user presses the new one
                if m.pressed_at is not None:
                    self.press_soon(m)
            elif self.kills_done < len(self.kill_points):
                m.held_over_kill = True
                self.held.append(m)
            else:
                self.press_soon(m)

    # -- what users do ------------------------------------------------------------------------

    def press_soon(self, m: CampaignMessage) -> None:
        """Press now if a gateway is there to take it, else once the next one is."""
        if self.child is None:
            self.after_restart.append(m)
            return
        asyncio.get_running_loop().create_task(self.press(m))

    async def press(self, m: CampaignMessage) -> None:
        assert m.prompt_id is not None
        assert m.prompt_data is not None
        child = self.child
        if child is None:
            self.after_restart.append(m)
            return
        chat = self.plan_of(m)
        m.mark_pressed(time.monotonic())
        self.next_id += 1
        callback = f"cb{self.next_id}"
        self.presses[m.token] = (child, callback)
        event = {
            "type": "callback_query",
            "callback_query_id": callback,
            "chat_id": str(chat.chat_id),
            "sender": {"id": self.sender(chat)},
            "message_id": f"g{m.prompt_id}",
            "data": m.prompt_data,
        }
        with contextlib.suppress(ConnectionError):
            await child.emit(event)

    def plan_of(self, m: CampaignMessage) -> Chat:
        return next(c for c in self.plan if c.index == m.chat)

    def sender(self, chat: Chat) -> str:
        return WRITER if chat.group else str(chat.chat_id)

    async def write(self, chat: Chat, token: str, text: str, sender: str, mention: bool) -> None:
        self.next_id += 1
        chat_id = str(chat.chat_id)
        event = message(
            chat_id,
            text,
            message_id=str(self.next_id),
            sender_id=sender,
            chat_type="group" if chat.group else "dm",
            mentions_bot=mention,
        )
        assert self.child is not None
        self.deliveries[token] = ExternalDelivery(str(self.next_id), event, self.child)
        with contextlib.suppress(ConnectionError):  # it died: sent again after the restart
            await self.child.emit(event)

    def waiting_on(self, chat: Chat) -> int:
        return chat.outstanding()

    async def write_more(self) -> None:
        for chat in self.plan:
            window = GROUP_WINDOW if chat.group else 1
            while (
                self.child is not None
                and chat.next < len(chat.messages)
                and self.waiting_on(chat) < window
            ):
                m = chat.messages[chat.next]
                for n, line in enumerate(m.chatter):
                    sender = CHATTERERS[n % len(CHATTERERS)]
                    await self.write(chat, line, f"just chatting {line}", sender, False)
                m.pushed_at = time.monotonic()
                chat.next += 1
                await self.write(chat, m.token, m.text("@bot"), self.sender(chat), chat.group)

    # -- kills --------------------------------------------------------------------------------

    async def kill_and_restart(self) -> None:
        await asyncio.sleep(self.rng.uniform(0, 0.15))
        dead = self.child
        self.child = None
        self.serve.kill()
        self.kill_times.append(time.monotonic())
        await asyncio.sleep(DRAIN_SECONDS)  # the control socket reports the dead child's last
        self.read_sends()
        self.serve.start()
        await self.serve.wait_ready()
        born = len(self.serve.lifetimes) - 1
        child = self.control.children[-1]
        while self.lifetime(child) != born:
            await asyncio.sleep(0.01)
            child = self.control.children[-1]
        assert dead is not None
        await self.settle_after(dead, child)
        self.child = child
        due, self.held, self.after_restart = [*self.held, *self.after_restart], [], []
        for m in due:  # buttons the killed process sent, pressed now
            self.press_soon(m)

    async def settle_after(self, dead: FakeChild, child: FakeChild) -> None:
        """After a restart: send again what the platform still holds; note what is gone."""
        acked = {str(c.get("message_id")) for c in dead.of_type("ack_message")}
        recorded = recorded_message_ids(self.root)
        for token, d in self.deliveries.items():
            if d.child is not dead:
                continue
            taken = d.message_id in dead.emitted
            if (self.ack and d.message_id not in acked) or not taken:
                d.child = child
                self.resent += 1
                with contextlib.suppress(ConnectionError):
                    await child.emit(d.event)
            elif not self.ack and d.message_id not in recorded:
                m = self.message_of(token)
                if m is not None and m.answered_at is None:
                    m.undelivered = IN_FLIGHT
        answered = {str(c.get("callback_query_id")) for c in dead.of_type("answer_callback_query")}
        for token, (pressed_on, callback) in list(self.presses.items()):
            m = self.message_of(token)
            if pressed_on is dead and callback not in answered and m and m.answered_at is None:
                self.presses_repeated += 1  # the press died with the process
                self.after_restart.append(m)

    def prompts_ahead(self) -> bool:
        """Whether a tool call is still to be asked.

        The first kill waits for one to hold (so an approval always crosses a restart).
        """
        return any(m.tool and m.prompt_id is None for c in self.plan for m in c.messages)

    def message_of(self, token: str) -> CampaignMessage | None:
        for chat in self.plan:
            for m in chat.messages:
                if m.token == token:
                    return m
        return None

    def done(self) -> bool:
        return all(
            m.answered_at is not None or m.undelivered is not None
            for c in self.plan
            for m in c.messages
        ) and all(c.next == len(c.messages) for c in self.plan)

    def may_kill(self) -> bool:
        return self.kills_done > 0 or bool(self.held) or not self.prompts_ahead()

    async def press_leftovers(self) -> None:
        for m in [*self.held, *self.after_restart]:  # kills ran out before these were pressed
            await self.press(m)


def _dump(path: Path, control: GatewayControl) -> None:
    """Every command each gateway child got, one JSON object a line (to read a failure)."""
    with path.open("w") as out:
        for child in control.children:
            for command, at in zip(child.commands, child.arrived, strict=True):
                out.write(json.dumps({"child": child.pid, "at": at, "command": command}) + "\n")


async def run_campaign(
    *,
    messages: int,
    chats: int,
    kills: int,
    ack: bool,
    seed: int = 1,
    workdir: Path | None = None,
    stall_seconds: float = 30.0,
) -> tuple[CampaignResult, int, int]:
    """Run one campaign: its result, presses repeated after a kill, messages sent again.

    ``workdir`` (default: a temporary directory, removed) holds the workspace,
    ``commands.jsonl`` and each serving process's log.
    """
    rng = random.Random(seed)
    root = workdir or Path(tempfile.mkdtemp(prefix="ext-campaign-"))
    try:
        async with GatewayControl() as control, ScriptedLLMServer(responder=group_model) as llm:
            the_plan = plan(chats, messages, rng)
            capabilities = "typing,reply,inline_keyboard" + (",ack" if ack else "")
            args = control.command("--capabilities", capabilities)["args"]
            config = write_campaign_workspace(root, args=args, llm_url=llm.openai_base_url)
            serve = ServeProcess(config, gateway=GATEWAY)
            campaign = _ExternalCampaign(
                control, serve, root, the_plan, kills, rng, ack=ack, stall_seconds=stall_seconds
            )
            started = time.monotonic()
            serve.start()
            try:
                await serve.wait_ready()
                campaign.child = await control.child(0)
                await campaign.run()
            finally:
                serve.stop()
            _dump(root / "commands.jsonl", control)
            ids = {token: d.message_id for token, d in campaign.deliveries.items()}
            mark_chatter(campaign.plan, ids, recorded_message_ids(root))
            wall = time.monotonic() - started
            result = verdict(
                campaign.plan,
                campaign.sent,
                serve,
                campaign.kill_times,
                wall,
                at_most_once=not ack,
            )
            return result, campaign.presses_repeated, campaign.resent
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
