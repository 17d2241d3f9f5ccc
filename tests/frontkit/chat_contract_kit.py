"""What the chat contract suites share: the driver Protocol, the setup, message makers.

``contract_chat`` (replies, routing, access, mention gating, buffer, commands) and
``contract_approvals`` (buttons, requester, restart) are written against ``ChatDriver``; a
module running them provides the ``open_chat`` fixture (``OpenChat``) for its adapter.

The tables name the gateway the chats are on (``GATEWAY``, in ``DM`` and ``GROUP``) and one
they are not on (``OTHER_GATEWAY``). They default to Telegram (star-import the suites); a
platform whose gateway or chat ids differ takes the same tables with its own names from
``contract_tests(Platform(...))``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from duragent.frontkit import ButtonPress, ChatRef, ChatType, InboundMessage, OutboundPort, Sender
from duragent.scheduler import At, Destination, Schedule, TaskPayload
from duragent.scheduler.chat import ChatPayloads
from duragent.session import SessionRegistry
from duragent.testing import ScriptedLLMServer
from duragent.tools.base import Tool
from duragent.turns import TurnRunner

GATEWAY = "telegram"
OTHER_GATEWAY = "discord"
"""A gateway the chats are not on: routes and allowlists naming it must not match."""
DM = ChatRef(GATEWAY, "1001")
GROUP = ChatRef(GATEWAY, "-100200")
ANN = Sender("1001", "ann", "Ann")
BOB = Sender("1002", "bob", None)
EVE = Sender("1003", None, None)

ASK = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
"""


@dataclass
class ChatSetup:
    """The workspace a test runs against: agents, their ``spec.access``, routes, tools."""

    access: dict[str, Any] | None = None
    routes: list[dict[str, Any]] = field(default_factory=list)
    agents: tuple[str, ...] = ("bot",)
    policy: str | None = None
    tools: list[Tool] = field(default_factory=list)


class ChatDriver(Protocol):
    """A chat adapter under test, seen from the platform's side."""

    llm: ScriptedLLMServer
    registry: SessionRegistry
    bot_username: str
    quotes_in_direct_messages: bool
    """Whether a reply in a DM quotes the message it answers (Telegram's do not: a DM is its
    own thread, so ``reply_parameters`` go with group replies only)."""
    presses_at_once: bool
    """Whether two presses made together are handled together (Telegram's updates and an
    external gateway's lines are handled in order: the second press is read once the first's
    decision is recorded, when nothing waits any more)."""

    async def message(self, msg: InboundMessage) -> None:
        """Hand ``msg`` to the adapter; returns once the adapter accepted it."""
        ...

    async def press(self, press: ButtonPress) -> None:
        """Press a button."""
        ...

    async def settle(self) -> None:
        """Wait until every turn started so far has finished and been delivered."""
        ...

    async def restart(self) -> None:
        """Stop the serving side and start it again on the same files."""
        ...

    async def scheduled_task(self, chat: ChatRef, task: str) -> None:
        """Run a scheduled task for ``chat`` (``run_scheduled_task``): a turn nobody asked."""
        ...

    def texts(self, chat: ChatRef) -> list[str]:
        """The texts the bot sent to ``chat`` (approval prompts excluded), in order."""
        ...

    def toasts(self) -> list[str]:
        """The toasts answering button presses, in order."""
        ...

    def edits(self, chat: ChatRef) -> list[str]:
        """The texts messages in ``chat`` were edited to, in order."""
        ...

    def approval(self, chat: ChatRef) -> tuple[str, str, tuple[str, ...]]:
        """The latest approval asked in ``chat``: (its message id, command, button payloads)."""
        ...

    def replies_to(self, chat: ChatRef) -> list[str | None]:
        """For each text sent to ``chat``, the message it replied to."""
        ...


OpenChat = Callable[[ChatSetup], AbstractAsyncContextManager[ChatDriver]]

_ids = iter(range(1, 1_000_000))


def said(
    chat: ChatRef,
    text: str | None,
    sender: Sender = ANN,
    *,
    mention: bool = False,
    reply_to_bot: bool = False,
    kind: str = "text",
    message_id: str | None = None,
    dm: bool | None = None,
) -> InboundMessage:
    """``text`` from ``sender`` in ``chat``: a DM when it is ``DM`` (or ``dm=True``)."""
    is_dm = chat.chat_id == DM.chat_id if dm is None else dm
    chat_type: ChatType = "dm" if is_dm else "group"
    return InboundMessage(
        gateway=chat.gateway,
        chat_id=chat.chat_id,
        chat_type=chat_type,
        message_id=message_id or f"p{next(_ids)}",
        sender=sender,
        text=text,
        content_kind=kind,
        mentions_bot=mention,
        reply_to_bot=reply_to_bot,
    )


def pressed(chat: ChatRef, data: str, message_id: str, sender: Sender = ANN) -> ButtonPress:
    return ButtonPress(
        gateway=chat.gateway,
        chat_id=chat.chat_id,
        callback_id=f"cb{next(_ids)}",
        sender=sender,
        message_id=message_id,
        data=data,
    )


async def run_scheduled_task(
    runner: TurnRunner, outbound: OutboundPort | None, chat: ChatRef, task: str
) -> None:
    """Run ``task`` for the agent ``bot`` in ``chat`` as the scheduler does when it is due.

    The scheduler's own payload runner (``ChatPayloads``) over the adapter's outbound port: a
    ``[Scheduled Task]`` turn in the chat's session with no requester, its reply or approval
    delivered to the chat.
    """
    assert outbound is not None, "the gateway is not started"
    due = datetime.now(UTC)
    schedule = Schedule(
        id=f"sched_contract{next(_ids)}",
        agent="bot",
        timing=At(due),
        payload=TaskPayload(task),
        created_at=due,
        destination=Destination(chat.gateway, chat.chat_id),
    )

    async def record(session_id: str, seq: int) -> None:
        pass

    port = outbound
    payloads = ChatPayloads(runner, lambda gateway: port if gateway == chat.gateway else None)
    report = await payloads.run(schedule, due, record)
    assert report.error is None, report.error


def last_prompt(driver: ChatDriver) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = driver.llm.requests[-1].json["messages"]
    return messages


async def session_events(driver: ChatDriver, chat: ChatRef, agent: str = "bot") -> list[str]:
    """The event types of the chat's current session ([] when it has none)."""
    sid = await driver.registry.chat_session((chat.gateway, chat.chat_id, agent))
    if sid is None:
        return []
    return [e.type for e in await driver.registry.handle(sid).events()]


async def recorded_attachments(
    driver: ChatDriver, chat: ChatRef, agent: str = "bot"
) -> list[dict[str, Any]]:
    """The attachments the chat's current session's user messages name, in order."""
    sid = await driver.registry.chat_session((chat.gateway, chat.chat_id, agent))
    if sid is None:
        return []
    events = await driver.registry.handle(sid).events()
    return [a for e in events if e.type == "user_message" for a in e.data.get("attachments", [])]


@dataclass(frozen=True, slots=True)
class Platform:
    """The names the tables use, for a platform whose gateway or group id is not Telegram's."""

    gateway: str
    other_gateway: str
    group_id: str


def contract_tests(platform: Platform) -> dict[str, Any]:
    """The tests of ``contract_chat`` and ``contract_approvals`` with ``platform``'s names.

    Each suite module is executed afresh (its parametrize tables are built at import) while
    this module's ``GATEWAY``, ``OTHER_GATEWAY``, ``DM`` and ``GROUP`` are the platform's; the
    including test module puts the returned tests in its globals.
    """
    kit = sys.modules[__name__]
    names: dict[str, object] = {
        "GATEWAY": platform.gateway,
        "OTHER_GATEWAY": platform.other_gateway,
        "DM": ChatRef(platform.gateway, DM.chat_id),
        "GROUP": ChatRef(platform.gateway, platform.group_id),
    }
    saved = {name: getattr(kit, name) for name in names}
    for name, value in names.items():
        setattr(kit, name, value)
    tests: dict[str, Any] = {}
    try:
        for suite in ("contract_chat", "contract_approvals", "contract_strangers"):
            path = Path(__file__).with_name(f"{suite}.py")
            spec = importlib.util.spec_from_file_location(f"{__package__}.{suite}", path)
            assert spec is not None
            assert spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            tests.update({k: v for k, v in vars(module).items() if k.startswith("test_")})
    finally:
        for name, value in saved.items():
            setattr(kit, name, value)
    return tests
