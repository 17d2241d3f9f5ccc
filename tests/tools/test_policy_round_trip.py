"""An "allow always" entry is written only if the runtime can read it back, as every turn does."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.tools.policy_files import (
    LOCAL_POLICY_FILE,
    PolicyError,
    load_policy,
    save_allow_always,
)

EXISTING = 'apiVersion: duragent/v1alpha1\nkind: Policy\nallow:\n  - "bash:ls *"  # mine\n'


def test_a_pattern_yaml_cannot_read_back_is_refused_and_the_file_is_left_as_it_was(
    tmp_path: Path,
) -> None:
    local = tmp_path / LOCAL_POLICY_FILE
    local.write_text(EXISTING, encoding="utf-8")
    with pytest.raises(PolicyError, match="left unchanged"):
        save_allow_always(tmp_path, "bash", "echo \ud800 hi")
    assert local.read_text(encoding="utf-8") == EXISTING
    assert load_policy(tmp_path / "none.yaml", tmp_path).allow == ("bash:ls *",)


@pytest.mark.parametrize(
    "command",
    ["echo \x85 \u2028 \ufeff", "printf '\\0' \x00", "echo é 😀 \t", 'echo "a: b" # c'],
)
def test_odd_characters_in_an_allowed_command_round_trip(tmp_path: Path, command: str) -> None:
    pattern = save_allow_always(tmp_path, "bash", command)
    assert pattern in load_policy(tmp_path / "none.yaml", tmp_path).allow
