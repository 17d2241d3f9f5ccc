"""``TurnResult``: four outcomes a front end matches on, each with its wire name."""

from __future__ import annotations

import dataclasses

import pytest

from duragent.core.messages import Usage
from duragent.turns import AwaitingApproval, Complete, Duplicate, Failed, TurnResult
from duragent.turns.result import copy_result


def describe(result: TurnResult) -> str:
    """What a front end does with each outcome (mypy checks the match covers the union)."""
    match result:
        case Complete(content=text):
            return f"reply {text}"
        case AwaitingApproval(call_id=call_id, command=command):
            return f"ask {call_id} {command}"
        case Duplicate():
            return "nothing"
        case Failed(content=text):
            return f"sorry {text}"


RESULTS: list[TurnResult] = [
    Complete(
        session_id="s",
        content="hi",
        message_id="m",
        reply_seq=3,
        usage=Usage(prompt_tokens=1, completion_tokens=2),
    ),
    AwaitingApproval(session_id="s", call_id="c1", command="bash:rm"),
    Duplicate(session_id="s"),
    Failed(session_id="s", content="Sorry", error="boom"),
]


def test_each_outcome_is_matched_by_its_class() -> None:
    assert [describe(r) for r in RESULTS] == [
        "reply hi",
        "ask c1 bash:rm",
        "nothing",
        "sorry Sorry",
    ]


def test_each_outcome_keeps_the_wire_name_http_sends() -> None:
    assert [r.status for r in RESULTS] == ["complete", "awaiting_approval", "duplicate", "error"]


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: r.status)
def test_a_steered_copy_is_the_same_outcome_marked_steered(result: TurnResult) -> None:
    copy = copy_result(result, steered=True)
    assert type(copy) is type(result)
    assert copy.steered
    assert not result.steered
    assert {**_fields(copy), "steered": False} == _fields(result)


def _fields(result: TurnResult) -> dict[str, object]:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


def test_outcomes_without_text_read_as_empty_and_cannot_be_given_any() -> None:
    assert [r.content for r in RESULTS] == ["hi", "", "", "Sorry"]
    with pytest.raises(TypeError):
        Duplicate(session_id="s", content="x")  # type: ignore[call-arg]
