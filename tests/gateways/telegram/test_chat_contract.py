"""The chat contract suites (``contract_chat``, ``contract_approvals``) run through Telegram.

The same tables as ``tests/frontkit/test_chat_contract.py`` (the memory adapter), driven
through the real Telegram gateway and the fake Bot API server (``telegram_chat``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from tests.frontkit.chat_contract_kit import ChatDriver, ChatSetup
from tests.frontkit.contract_approvals import *  # noqa: F403 — the shared suites
from tests.frontkit.contract_chat import *  # noqa: F403
from tests.frontkit.contract_strangers import *  # noqa: F403
from tests.gateways.telegram.telegram_chat import telegram_chat


@pytest.fixture
def open_chat(tmp_path: Path) -> Callable[[ChatSetup], AbstractAsyncContextManager[ChatDriver]]:
    return lambda setup: telegram_chat(tmp_path, setup)
