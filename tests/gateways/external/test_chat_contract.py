"""The chat contract suites (``contract_chat``, ``contract_approvals``) through an external gateway.

The same tables as the memory adapter and Telegram, driven through a real child process
speaking the plugin protocol (``external_chat``): nothing of routing, access, queueing,
commands or approvals is the external gateway's own.
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
from tests.gateways.external.external_chat import external_chat


@pytest.fixture
def open_chat(tmp_path: Path) -> Callable[[ChatSetup], AbstractAsyncContextManager[ChatDriver]]:
    return lambda setup: external_chat(tmp_path, setup)
