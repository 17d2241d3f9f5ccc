"""The year's tool checks: what the memory tool remembered and recalled, judged from disk."""

from __future__ import annotations

from pathlib import Path

from bench.year.checks import tool_checks
from bench.year.model import YearModel


def test_the_memory_verdict_excuses_only_what_a_kill_cut(tmp_path: Path) -> None:
    """A recall cut by a kill, of a note whose ``remember`` a kill cut before writing, or of
    a note older than the 30 days ``recall`` reads, is not judged; a recall that misses a
    note on disk within them fails, whatever its remember was told."""
    model = YearModel(now_ms=lambda: 0, prose="")
    daily = tmp_path / ".duragent" / "agents" / "small" / "memory" / "daily"
    daily.mkdir(parents=True)
    (daily / "2026-11-24.md").write_text("- kept\n- written, then cut\n- missed\n")
    (daily / "2026-10-01.md").write_text("- long ago\n")
    model.remembered = {
        "kept": True,
        "written, then cut": None,
        "never written": None,
        "missed": True,
        "long ago": True,
    }
    model.recalls = {
        "kept": True,
        "written, then cut": True,
        "never written": False,
        "missed": None,
        "long ago": False,
    }
    model.days_between = {"kept": 3.0, "long ago": 54.0}  # ``recall`` reads 30 days at most
    problems, _reads, notes = tool_checks(tmp_path, model)
    assert problems == []
    assert (notes.remembered, notes.once, notes.remembers_cut) == (5, 4, 2)
    assert (notes.recalls, notes.found, notes.recalls_cut) == (5, 2, 1)
    assert (notes.never_stored, notes.too_old) == (1, 1)

    model.recalls["written, then cut"] = False  # on disk: its recall must return it
    model.remembered["kept"] = False  # not cut, yet not remembered
    model.days_between["long ago"] = 27.0  # within what recall reads: it must be found
    problems, _reads, notes = tool_checks(tmp_path, model)
    assert len(problems) == 3
    assert notes.never_stored == 1
