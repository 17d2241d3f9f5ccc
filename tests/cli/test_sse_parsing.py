"""The chat client reads server-sent events by the standard's rules, not line by line."""

from __future__ import annotations

from duragent.cli.client import SseEvent, parse_sse


def test_each_event_ends_at_a_blank_line_with_its_name_and_json_data() -> None:
    lines = ["event: token", 'data: {"content": "Hi"}', "", "event: done", "data: {}", ""]
    assert list(parse_sse(lines)) == [
        SseEvent("token", {"content": "Hi"}),
        SseEvent("done", {}),
    ]


def test_data_split_over_several_lines_is_joined_with_newlines() -> None:
    lines = ["event: token", 'data: {"content":', 'data: "two lines"}', ""]
    assert list(parse_sse(lines)) == [SseEvent("token", {"content": "two lines"})]


def test_comments_and_keep_alives_are_skipped_and_unnamed_events_are_messages() -> None:
    lines = [": ping", "", "id: 7", "data: 3", ""]
    assert list(parse_sse(lines)) == [SseEvent("message", {"value": 3})]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    lines = ["event:token", "data:  not json", ""]
    assert list(parse_sse(lines)) == [SseEvent("token", {"raw": " not json"})]


def test_an_event_cut_before_its_blank_line_is_still_delivered() -> None:
    assert list(parse_sse(["event: error", 'data: {"message": "gone"}'])) == [
        SseEvent("error", {"message": "gone"})
    ]
