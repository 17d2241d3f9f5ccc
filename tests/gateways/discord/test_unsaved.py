"""Discord hands a message once: one the store refuses is held and recorded later, or told.

A full disk is the storage failure here (the session store's file operations, the OS
boundary); the database going away is the same ``StorageError`` to the kit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from duragent.frontkit import NOT_SAVED
from duragent.store import SessionStore, StoreHealth
from duragent.testing import Reply
from duragent.testing.discord_objects import Person
from tests.context.quoted_wire import spoken
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.gateways.discord.discord_chat import DiscordChat, discord_chat
from tests.polling import eventually
from tests.store.failing_ops import FailingFileOps

ANN = Person(1001, "ann", global_name="Ann")
DM = 1001


def full_disk(chat: DiscordChat) -> FailingFileOps:
    store = chat.registry.store
    assert isinstance(store, SessionStore)
    disk = FailingFileOps()
    store.ops, store.health = disk, StoreHealth(store.root, disk)
    disk.failing = True
    return disk


async def test_a_message_written_while_the_disk_is_full_is_answered_once_space_is_freed(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.gateway.unsaved_pauses = (0.05,) * 40  # two seconds of attempts
        chat.llm.enqueue(Reply(text="one"), Reply(text="two"))  # whether steered or not
        disk = full_disk(chat)
        pushed = asyncio.create_task(chat.push(DM, "written while the disk is full", ANN))
        pushed_too = asyncio.create_task(chat.push(DM, "and a second one", ANN))
        await asyncio.sleep(0.5)
        disk.failing = False  # space freed
        await asyncio.gather(pushed, pushed_too)
        await chat.settle()
        texts = [m["content"] for m in chat.dc.sent(DM)]
    assert texts
    assert NOT_SAVED not in texts
    asked = spoken(chat.llm.requests[-1].json["messages"])
    assert asked == ["written while the disk is full", "and a second one"]  # one turn, or two


async def test_a_message_that_could_never_be_saved_is_told_so(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.gateway.unsaved_pauses = (0.01, 0.01)
        full_disk(chat)
        asked = await chat.push(DM, "lost to a full disk", ANN)
        assert await eventually(lambda: len(chat.dc.sent(DM)) == 1)
        [told] = chat.dc.sent(DM)
        assert told["content"] == NOT_SAVED
        assert told["message_reference"]["message_id"] == asked["id"]
        assert chat.llm.requests == []  # never answered as if it had been recorded
