"""Which copies of a reply a kill excuses: ``ServeProcess.resent_after_kill``.

Lives are set by hand (a start and an end on the monotonic clock, killed or not): the rule is
arithmetic on them, and the processes themselves are exercised by the restart campaigns.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing.serve_process import ServeProcess

INF = float("inf")


def lives(tmp_path: Path, *spans: tuple[float, float, bool]) -> ServeProcess:
    serve = ServeProcess(tmp_path / "duragent.yaml")
    serve.lifetimes = [[start, end] for start, end, _ in spans]
    serve.killed = [killed for _, _, killed in spans]
    return serve


def test_a_copy_from_the_next_life_after_a_kill_is_a_resend(tmp_path: Path) -> None:
    serve = lives(tmp_path, (0, 10, True), (11, INF, False))
    assert serve.resent_after_kill(0, 1, at=12)


def test_a_second_copy_from_the_same_life_is_no_resend(tmp_path: Path) -> None:
    serve = lives(tmp_path, (0, 10, True), (11, INF, False))
    assert not serve.resent_after_kill(1, 1, at=12)


def test_a_copy_after_a_clean_stop_is_no_resend(tmp_path: Path) -> None:
    serve = lives(tmp_path, (0, 10, False), (11, INF, False))
    assert not serve.resent_after_kill(0, 1, at=12)


def test_a_node_that_started_before_the_killed_one_resends_after_the_kill(tmp_path: Path) -> None:
    serve = lives(tmp_path, (0, INF, False), (5, 10, True))  # b's life 0 outlives a's life 1
    assert serve.resent_after_kill(1, 0, at=11)


def test_a_copy_another_node_sent_before_the_kill_is_no_resend(tmp_path: Path) -> None:
    serve = lives(tmp_path, (0, INF, False), (5, 10, True))
    assert not serve.resent_after_kill(1, 0, at=9)


def test_a_copy_after_a_process_that_sent_nothing_is_no_resend(tmp_path: Path) -> None:
    serve = lives(tmp_path, (0, 10, True))
    assert not serve.resent_after_kill(-1, 0, at=5)
