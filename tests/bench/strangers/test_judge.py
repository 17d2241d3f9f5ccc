"""The month's judge: a file sent back twice passes only as the crash window it documents."""

from __future__ import annotations

from pathlib import Path

from bench.strangers.judge_chats import again_without_a_kill
from duragent.testing.serve_process import ServeProcess


def _serve(tmp_path: Path, lives: list[tuple[float, float, bool]]) -> ServeProcess:
    """A serving process that lived ``lives`` (start, end, killed), never started for real."""
    serve = ServeProcess(tmp_path / "duragent.yaml")
    serve.lifetimes = [[start, end] for start, end, _ in lives]
    serve.killed = [killed for _, _, killed in lives]
    return serve


def test_a_copy_sent_again_by_the_next_process_after_a_kill_is_the_crash_window(
    tmp_path: Path,
) -> None:
    serve = _serve(tmp_path, [(0.0, 10.0, True), (11.0, 20.0, False)])
    assert again_without_a_kill(serve, "#d1#", [9.9, 11.5]) == []


def test_two_copies_from_one_process_are_a_problem(tmp_path: Path) -> None:
    serve = _serve(tmp_path, [(0.0, 10.0, True), (11.0, 20.0, False)])
    assert again_without_a_kill(serve, "#d1#", [12.0, 13.0]) == [
        "document #d1#: sent again by process 1 without a kill of 1"
    ]


def test_a_copy_sent_again_after_a_clean_stop_is_a_problem(tmp_path: Path) -> None:
    serve = _serve(tmp_path, [(0.0, 10.0, False), (11.0, 20.0, False)])
    assert again_without_a_kill(serve, "#d1#", [9.0, 12.0]) == [
        "document #d1#: sent again by process 1 without a kill of 0"
    ]
