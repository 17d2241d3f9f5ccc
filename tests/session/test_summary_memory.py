"""The summaries tier's durable part: summary, pin and unpin events, state.yaml, recovery.

A real registry over a real store: what a live session holds after a summary is exactly what
a recovered one holds, from state.yaml, from the log replayed over an older state.yaml (the
crash between the event's fsync and the snapshot), and from the log alone.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from duragent.core.events import EventType
from duragent.core.messages import Message, ToolCall
from duragent.core.snapshot import message_to_dict
from duragent.session import NewSession, RegistrySettings, SessionHandle, SessionRegistry
from duragent.store import SessionStore


async def open_registry(root: Path) -> SessionRegistry:
    registry = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await registry.open()
    return registry


async def converse(handle: SessionHandle, rng: random.Random, turns: int) -> None:
    base = rng.randrange(1 << 30)  # call ids are unique, as models make them
    for t in range(base, base + turns):
        await handle.add_user_message(f"user {t} " + "x" * rng.randint(0, 40))
        for k in range(rng.randint(0, 2)):
            call = ToolCall(id=f"c{t}_{k}", name="bash", arguments='{"command": "ls"}')
            await handle.add_assistant_response("", tool_calls=[call], durable=True)
            await handle.add_tool_result(call.id, True, f"out {t} {k}")
        await handle.add_assistant_response(f"answer {t}")


async def view(handle: SessionHandle) -> tuple[list[dict[str, Any]], Any]:
    messages = [message_to_dict(m) for m in await handle.messages()]
    memory = await handle.memory()
    return messages, (memory.summary, memory.pins, memory.task)


def last_of_prefix(window: list[Message], rng: random.Random) -> Message:
    """A message ending a unit (never a call whose results follow)."""
    ends = [
        i
        for i, m in enumerate(window[:-1])
        if not m.tool_calls and window[i + 1].role.value != "tool"
    ]
    return window[rng.choice(ends)]


@pytest.mark.parametrize("seed", range(4))
async def test_a_recovered_session_holds_exactly_the_live_summary_window_and_pins(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    registry = await open_registry(tmp_path)
    sid = await registry.create(NewSession(agent="a"))
    handle = registry.handle(sid)
    await converse(handle, rng, rng.randint(3, 8))
    await handle.pin("use metric units", kind="decision", source="agent")
    gone = await handle.pin("temporary", kind="note")
    window = await handle.messages()
    before_summary = tmp_path / "before.yaml"
    shutil.copy(tmp_path / sid / "state.yaml", before_summary)
    recorded = await handle.record_summary(
        "## Goal\n- count",
        last=last_of_prefix(window, rng),
        tokens_before=100,
        tokens_after=20,
        model="m",
    )
    assert recorded is not None
    assert recorded.round == 1
    assert await handle.unpin(gone)
    await converse(handle, rng, rng.randint(1, 4))
    live = await view(handle)
    await registry.aclose()

    # from state.yaml and the log after it
    registry = await open_registry(tmp_path)
    assert await view(registry.handle(sid)) == live
    await registry.aclose()
    # the crash between the summary's fsync and its snapshot: an older state.yaml
    shutil.copy(before_summary, tmp_path / sid / "state.yaml")
    registry = await open_registry(tmp_path)
    assert await view(registry.handle(sid)) == live
    await registry.aclose()
    # the log alone
    (tmp_path / sid / "state.yaml").unlink()
    registry = await open_registry(tmp_path)
    assert await view(registry.handle(sid)) == live
    events = await registry.handle(sid).events(include_archive=True)
    await registry.aclose()
    summaries = [e for e in events if e.type == EventType.SUMMARY]
    assert len(summaries) == 1  # never written again by recovery
    assert summaries[0].data["through_seq"] < summaries[0].seq


async def test_a_summary_takes_the_window_up_to_its_last_message_but_never_splits_a_call(
    tmp_path: Path,
) -> None:
    registry = await open_registry(tmp_path)
    sid = await registry.create(NewSession(agent="a"))
    handle = registry.handle(sid)
    await handle.add_user_message("look")
    calls = [ToolCall(id=f"c{i}", name="bash", arguments="{}") for i in (1, 2)]
    await handle.add_assistant_response("", tool_calls=calls, durable=True)
    for call in calls:
        await handle.add_tool_result(call.id, True, f"out {call.id}")
    await handle.add_assistant_response("seen")
    await handle.add_user_message("next")
    window = await handle.messages()
    inside = await handle.record_summary(
        "s", last=window[2], tokens_before=1, tokens_after=1, model="m"
    )
    recorded = await handle.record_summary(
        "s", last=window[4], tokens_before=1, tokens_after=1, model="m"
    )
    after = await handle.messages()
    await registry.aclose()
    assert inside is None  # the first result: the second would be cut from its call
    assert recorded is not None
    assert recorded.messages == 5
    assert after == window[5:]


async def test_a_stale_or_unfinished_prefix_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    registry = await open_registry(tmp_path)
    sid = await registry.create(NewSession(agent="a"))
    handle = registry.handle(sid)
    await handle.add_user_message("run it")
    call = ToolCall(id="open", name="bash", arguments="{}")
    await handle.add_assistant_response("", tool_calls=[call], durable=True)
    window = await handle.messages()
    waiting = await handle.record_summary(
        "s", last=window[-1], tokens_before=1, tokens_after=1, model="m"
    )
    stale = await handle.record_summary(
        "s", last=Message.user("run it"), tokens_before=1, tokens_after=1, model="m"
    )
    after = await handle.messages()
    memory = await handle.memory()
    await registry.aclose()
    assert waiting is None
    assert stale is None
    assert after == window
    assert memory.summary is None


def test_the_history_api_shows_a_marker_where_a_summary_replaced_messages() -> None:
    from duragent.core.events import Event
    from duragent.session import events_to_messages

    events = [
        Event.user_message(1, content="hi"),
        Event.assistant_response(2, agent="a", content="hello"),
        Event.summary(
            3,
            round=1,
            summary="## Goal\n- greet",
            through_seq=2,
            messages=2,
            tokens_before=50,
            tokens_after=10,
            model="m",
        ),
        Event.user_message(4, content="again"),
    ]
    shown = events_to_messages(events, include_tools=False)
    assert [m["role"] for m in shown] == ["user", "assistant", "summary", "user"]
    assert shown[2]["content"] == "## Goal\n- greet"
    assert (shown[2]["round"], shown[2]["through_seq"], shown[2]["messages"]) == (1, 2, 2)


async def test_a_summary_after_a_restart_names_the_seq_its_last_message_came_from(
    tmp_path: Path,
) -> None:
    """``through_seq`` is exact for messages loaded from state.yaml, not its checkpoint.

    The window's oldest messages after a restart come from the snapshot; their events are
    long before the snapshot's checkpoint. A summary of them that named the checkpoint would
    claim to stand for messages still in the window (a client greying out what a summary
    replaced would hide them).
    """
    registry = await open_registry(tmp_path)
    sid = await registry.create(NewSession(agent="a"))
    handle = registry.handle(sid)
    for t in range(40):  # past the checkpoint threshold: the snapshot holds the window
        await handle.add_user_message(f"user {t}")
        await handle.add_assistant_response(f"answer {t}")
    await registry.aclose()

    registry = await open_registry(tmp_path)
    handle = registry.handle(sid)
    window = await handle.messages()
    recorded = await handle.record_summary(
        "s", last=window[3], tokens_before=1, tokens_after=1, model="m"
    )
    events = await handle.events(include_archive=True)
    await registry.aclose()
    kinds = (EventType.USER_MESSAGE, EventType.ASSISTANT_RESPONSE, EventType.ASSISTANT_MESSAGE)
    said = [e for e in events if e.type in kinds]
    assert recorded is not None
    assert recorded.through_seq == said[3].seq


@pytest.mark.parametrize("mode", ["discard", "archive"])
async def test_every_compaction_mode_keeps_the_summary_marker_and_the_window_in_the_history(
    tmp_path: Path, mode: str
) -> None:
    """A summary forces a checkpoint; rolling the log over must not take its marker along.

    With ``discard``, the rollover after each summary used to delete the summary event and
    every message the window still held (they were only in state.yaml): the history API
    showed the messages after the last snapshot and no marker. Only what is older than the
    window and the current summary may be discarded; a restart rebuilds the same window.
    """
    from duragent.session import events_to_messages

    rng = random.Random(7)
    registry = await open_registry(tmp_path)
    sid = await registry.create(NewSession(agent="a", rollover=mode))
    handle = registry.handle(sid)
    for _ in range(2):  # the second round replaces the first: only the current one must stay
        await converse(handle, rng, 6)
        recorded = await handle.record_summary(
            "## Goal\n- count",
            last=last_of_prefix(await handle.messages(), rng),
            tokens_before=100,
            tokens_after=20,
            model="m",
        )
        assert recorded is not None
    await converse(handle, rng, 2)
    await handle.snapshot()
    live = await view(handle)
    window_users = [m["content"] for m in live[0] if m["role"] == "user"]
    shown = events_to_messages(await handle.events(include_archive=True), include_tools=False)
    await registry.aclose()

    markers = [m for m in shown if m["role"] == "summary"]
    assert markers
    assert markers[-1]["round"] == 2
    shown_users = [m["content"] for m in shown if m["role"] == "user"]
    assert shown_users[-len(window_users) :] == window_users
    registry = await open_registry(tmp_path)
    assert await view(registry.handle(sid)) == live
    await registry.aclose()
