"""The campaigns' plan: a chat's outstanding messages, counted without walking its history."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from duragent.testing.campaign_verdict import (
    IN_FLIGHT,
    INTERRUPTED,
    CampaignMessage,
    Chat,
    SentText,
    mark_answers,
    verdict,
)
from duragent.testing.serve_process import ServeProcess
from tests.work import lines_run


def _chat(n: int) -> Chat:
    return Chat(0, 7, False, [CampaignMessage(7, i, f"t{i}") for i in range(n)])


def _naive(chat: Chat) -> int:
    return sum(
        1 for m in chat.messages[: chat.next] if m.answered_at is None and m.undelivered is None
    )


def test_outstanding_counts_sent_messages_neither_answered_nor_lost_in_any_order() -> None:
    rng = random.Random(5)
    chat = _chat(300)
    while chat.next < len(chat.messages) or _naive(chat):
        if chat.next < len(chat.messages) and rng.random() < 0.6:
            chat.next += 1
        open_ = [m for m in chat.messages[: chat.next] if m.answered_at is None]
        if open_ and rng.random() < 0.5:
            m = rng.choice(open_)  # out of order too
            if rng.random() < 0.1:
                m.undelivered = IN_FLIGHT
            else:
                m.answered_at = 1.0
        assert chat.outstanding() == _naive(chat)


def test_asking_every_tick_costs_what_is_open_not_the_whole_history() -> None:
    """20,000 settled messages and one open, against walking them all: counted in Python lines
    run (``tests/work.py``, 11 against 40,007 when written), not timed."""
    chat = _chat(20_001)
    chat.next = len(chat.messages)
    for m in chat.messages[:-1]:
        m.answered_at = 1.0
    chat.outstanding()  # the cursor catches up once

    def work(count: Callable[[Chat], int]) -> int:
        return lines_run(lambda: count(chat))

    assert work(Chat.outstanding) * 50 < work(_naive)


def _tools(n: int) -> list[CampaignMessage]:
    return [CampaignMessage(7, i, f"#q7n{i}#", tool=True) for i in range(n)]


def test_a_reply_answers_the_messages_whose_mark_it_carries() -> None:
    first, second = _tools(2)
    assert mark_answers([first, second], f"done: 42-{second.token}", 5.0) == [second]
    assert (first.answered_at, second.answered_at) == (None, 5.0)
    assert not second.interrupted


def test_a_cut_call_reply_answers_the_pressed_tool_messages() -> None:
    first, second = _tools(2)
    second.pressed_at = 1.0
    assert mark_answers([first, second], f"bash: Error: {INTERRUPTED}", 5.0) == [second]
    assert second.interrupted
    assert not second.cut_unasked


def test_a_call_cut_before_its_approval_was_asked_is_answered_by_the_reply_that_says_so() -> None:
    """A kill between recording the call and asking for its approval: the restart closes the
    call and the chat is told; the chat was never prompted, so nothing was pressed."""
    first, second = _tools(2)
    assert mark_answers([first, second], f"bash: Error: {INTERRUPTED}", 5.0) == [first]
    assert first.interrupted
    assert first.cut_unasked
    assert second.answered_at is None


def test_a_held_approval_is_not_taken_for_a_call_a_kill_cut() -> None:
    """Its prompt was shown and is held over the kill: the restart asks again."""
    (held,) = _tools(1)
    held.prompts = 1
    assert mark_answers([held], f"bash: Error: {INTERRUPTED}", 5.0) == []
    assert held.answered_at is None


def test_a_reply_with_a_mark_and_a_cut_call_answers_only_its_own_message() -> None:
    first, second = _tools(2)
    assert mark_answers([first, second], f"re 42-{second.token}: {INTERRUPTED}", 5.0) == [second]
    assert first.answered_at is None


def test_a_press_repeated_after_the_cut_call_reply_still_finds_that_reply(tmp_path: Path) -> None:
    """The press reached the process a kill took before it confirmed it; after the restart
    the recovered turn said the call was cut, then the user pressed again (seen under load
    in the external gateway campaign): the first press bounds the reply, not the last."""
    (m,) = _tools(1)
    chat = Chat(0, 7, False, [m])
    chat.next = 1
    m.pushed_at, m.prompts = 1.0, 1
    m.mark_pressed(2.0)
    cut = SentText(7, f"Tool results: bash: Error: {INTERRUPTED}", 4.0, 1, False)
    assert mark_answers([m], cut.text, cut.at) == [m]
    m.mark_pressed(4.5)  # its press was never confirmed: pressed again after the restart
    assert m.pressed_at == 2.0
    result = verdict([chat], [cut], ServeProcess(tmp_path / "duragent.yaml"), [3.0], 5.0)
    assert result.problems == []
    assert result.answered_once == 1


def test_a_groups_cut_call_reply_after_its_next_mention_still_answers_it(tmp_path: Path) -> None:
    """Seen in the month of strangers: a group writes up to three mentions ahead, so the
    next one was written before the reply saying the call was cut; that reply was looked
    for only before the next mention, and the message read as never answered."""
    first, second = _tools(2)
    second.tool = False
    chat = Chat(0, -7, True, [first, second])
    chat.next = 2
    first.pushed_at, first.prompts = 1.0, 1
    first.mark_pressed(2.0)
    second.pushed_at = 3.0  # written ahead, before the cut reply
    cut = SentText(-7, f"done: Error: {INTERRUPTED}", 4.0, 1, False)
    assert mark_answers([first, second], cut.text, cut.at) == [first]
    answer = SentText(-7, f"heard {second.token}", 5.0, 1, False)
    second.answered_at = answer.at
    result = verdict([chat], [cut, answer], ServeProcess(tmp_path / "duragent.yaml"), [3.5], 6.0)
    assert result.problems == []
    assert result.answered_once == 2


def test_two_calls_a_kill_cut_are_two_answers_in_the_same_words(tmp_path: Path) -> None:
    """Seen in the month with two nodes: the model says what it got, and every cut call got
    the same words; each reply answered its own message, not one message twice."""
    first, second = _tools(2)
    chat = Chat(0, 7, False, [first, second])
    chat.next = 2
    replies = []
    for at, m in ((1.0, first), (5.0, second)):
        m.pushed_at, m.prompts = at, 1
        m.mark_pressed(at + 1)
        cut = SentText(7, f"done: Error: {INTERRUPTED}", at + 3, 1, False)
        assert mark_answers([m], cut.text, cut.at) == [m]
        replies.append(cut)
    result = verdict([chat], replies, ServeProcess(tmp_path / "duragent.yaml"), [2.5, 6.5], 9.0)
    assert result.problems == []
    assert (result.answered_once, result.sent_twice_real) == (2, 0)
