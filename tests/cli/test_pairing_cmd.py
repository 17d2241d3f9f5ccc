"""``duragent pairing list|approve|revoke`` on a workspace's pairing files, with no server."""

from __future__ import annotations

from pathlib import Path

from duragent.frontkit.pairing import book_for
from tests.cli.test_commands import run


def _workspace(tmp_path: Path) -> Path:
    code, out = run("init", str(tmp_path), "--agent-name", "helper", "--no-interactive")
    assert code == 0, out
    return tmp_path / "duragent.yaml"


def test_an_owner_lists_and_approves_a_code_and_revokes_the_pairing(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    book = book_for(tmp_path / ".duragent", "helper")
    pending = book.request("telegram", "1002", "1002", "bob").code
    assert pending is not None

    code, out = run("pairing", "list", "-c", str(config))
    assert code == 0, out
    assert out.startswith("agent helper\n")
    assert f"waiting  {pending.code}  telegram 1002 (bob)  expires in 60 min" in out

    code, out = run("pairing", "approve", pending.code.lower(), "-c", str(config))
    assert code == 0, out
    assert (
        out
        == "paired bob (telegram 1002) with agent helper: their next direct message is answered\n"
    )
    assert book.paired("telegram") == {"1002"}
    code, out = run("pairing", "list", "-c", str(config))
    assert "paired   telegram 1002 (bob)  since " in out
    assert out.rstrip().endswith("by cli")

    code, out = run("pairing", "revoke", "telegram", "1002", "-c", str(config))
    assert code == 0, out
    assert out == "unpaired telegram 1002 from agent helper\n"
    assert book.paired("telegram") == frozenset()


def test_an_unknown_code_or_sender_fails_in_one_line_saying_what_to_run(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    code, out = run("pairing", "approve", "ABCD2345", "-c", str(config))
    assert code == 1
    assert "error: no pairing code ABCD2345 is waiting (a code expires 60 min" in out
    assert "`duragent pairing list`" in out
    code, out = run("pairing", "revoke", "telegram", "9", "-c", str(config), "--agent", "helper")
    assert code == 1
    assert "error: telegram 9 is not paired with agent helper" in out
    code, out = run("pairing", "list", "-c", str(config))
    assert (code, out) == (0, "no pairing codes waiting and nobody paired\n")


def test_a_config_path_that_does_not_exist_is_named(tmp_path: Path) -> None:
    code, out = run("pairing", "list", "-c", str(tmp_path / "nope.yaml"))
    assert code == 1
    assert "nope.yaml does not exist" in out
