"""The chat contract suite (``contract_chat``) run with the memory adapter.

A platform adapter's tests import the same suites (``contract_chat``,
``contract_approvals``) and give ``open_chat`` its own driver.
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
from tests.frontkit.memory_chat import memory_chat


@pytest.fixture(params=["memory"])
def open_chat(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[ChatSetup], AbstractAsyncContextManager[ChatDriver]]:
    assert request.param == "memory"
    return lambda setup: memory_chat(tmp_path, setup)
