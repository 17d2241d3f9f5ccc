"""A command loads ``duragent.yaml`` needing only the ``${VAR}``s of the fields it reads.

``agent create`` once refused to run because ``${TELEGRAM_BOT_TOKEN}`` was not exported
(issue 39); ``serve`` and ``doctor`` (``needed=None``) still require every one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.config import CONFIG_FILENAME, load_workspace
from duragent.errors import ConfigError

TELEGRAM = "server:\n  port: 9100\ngateways:\n  telegram:\n    bot_token: ${UNSET_TOKEN}\n"


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("UNSET_TOKEN", "UNSET_PORT", "UNSET_DIR", "UNSET_KEY"):
        monkeypatch.delenv(name, raising=False)


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / CONFIG_FILENAME
    path.write_text(text)
    return path


def test_a_full_load_refuses_an_unset_variable_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_workspace(config(tmp_path, TELEGRAM))
    assert info.value.line == 5
    assert info.value.reason == "environment variable UNSET_TOKEN is not set"


def test_a_load_that_does_not_need_the_field_leaves_it_out(tmp_path: Path) -> None:
    loaded = load_workspace(config(tmp_path, TELEGRAM), needed=("server",))

    telegram = loaded.config.gateways.telegram
    assert telegram is not None
    assert telegram.bot_token is None  # as if not written: never an empty token
    assert loaded.config.server.port == 9100  # the rest is read as written


def test_a_load_that_needs_the_field_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_workspace(config(tmp_path, TELEGRAM), needed=("gateways.telegram",))
    assert info.value.reason == "environment variable UNSET_TOKEN is not set"


def test_an_unset_number_left_out_takes_its_default(tmp_path: Path) -> None:
    loaded = load_workspace(config(tmp_path, "server:\n  port: ${UNSET_PORT}\n"), needed=())
    assert loaded.config.server.port == 8080


def test_the_workspace_paths_are_always_needed(tmp_path: Path) -> None:
    for text in ("workspace: ${UNSET_DIR}\n", "services:\n  session:\n    path: ${UNSET_DIR}\n"):
        with pytest.raises(ConfigError, match="UNSET_DIR is not set"):
            load_workspace(config(tmp_path, text), needed=())


def test_a_variable_in_a_block_of_text_is_placed_in_its_field(tmp_path: Path) -> None:
    text = "gateways:\n  telegram:\n    webhook_secret: |\n      s-${UNSET_KEY}\n"
    loaded = load_workspace(config(tmp_path, text), needed=("server",))
    with pytest.raises(ConfigError, match="UNSET_KEY is not set"):
        load_workspace(config(tmp_path, text), needed=("gateways",))
    telegram = loaded.config.gateways.telegram
    assert telegram is not None
    assert telegram.webhook_secret is None


def test_what_does_not_validate_without_the_field_is_the_variables_error(tmp_path: Path) -> None:
    text = "gateways:\n  external:\n    - name: ${UNSET_KEY}\n      command: ./run\n"
    with pytest.raises(ConfigError, match="UNSET_KEY is not set"):
        load_workspace(config(tmp_path, text), needed=())


def test_a_variable_in_a_key_is_the_variables_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="UNSET_KEY is not set"):
        load_workspace(config(tmp_path, "server:\n  ${UNSET_KEY}: 1\n"), needed=())
