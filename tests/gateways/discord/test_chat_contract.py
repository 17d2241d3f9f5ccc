"""The chat contract suites (``contract_chat``, ``contract_approvals``) run through Discord.

The same tables as the memory adapter and Telegram run, with Discord's names
(``contract_tests``), through a real ``discord.Client`` and the fake Discord server
(``discord_chat``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from tests.frontkit.chat_contract_kit import ChatDriver, ChatSetup, contract_tests
from tests.gateways.discord.discord_chat import PLATFORM, discord_chat

globals().update(contract_tests(PLATFORM))


@pytest.fixture
def open_chat(tmp_path: Path) -> Callable[[ChatSetup], AbstractAsyncContextManager[ChatDriver]]:
    return lambda setup: discord_chat(tmp_path, setup)
