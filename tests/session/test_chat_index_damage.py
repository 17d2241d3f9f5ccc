"""A damaged chat index (``sessions/chats.jsonl``) never stops the server or the other chats.

Bad lines are skipped, reported and moved aside with why; the chats they mapped are found
again from the session snapshots; all of it also after a restart.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.store.chat_index import ChatIndex, read_problems

GOOD = ("telegram", "1", "bot")
OTHER = ("telegram", "2", "bot")


def new_chat(chat_id: str) -> NewSession:
    return NewSession(agent="bot", gateway="telegram", gateway_chat_id=chat_id)


async def open_registry(root: Path) -> SessionRegistry:
    registry = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await registry.open()
    return registry


async def two_chats(root: Path) -> tuple[str, str]:
    registry = await open_registry(root)
    try:
        return (
            await registry.for_chat(GOOD, new_chat("1")),
            await registry.for_chat(OTHER, new_chat("2")),
        )
    finally:
        await registry.aclose()


async def test_bad_lines_are_skipped_reported_and_the_good_chats_keep_their_sessions(
    tmp_path: Path,
) -> None:
    good, other = await two_chats(tmp_path)
    index = tmp_path / "chats.jsonl"
    with index.open("a") as fh:
        fh.write("not json at all\n")
        fh.write(json.dumps({"key": ["telegram", "3", "bot"], "session_id": "../../etc"}) + "\n")
        fh.write(json.dumps({"key": ["telegram", "4"], "session_id": other}) + "\n")
        fh.write('{"key": ["telegram", "2", "bot"], "session_id": null')  # torn last line
    registry = await open_registry(tmp_path)
    try:
        assert await registry.for_chat(GOOD, new_chat("1")) == good
        assert await registry.for_chat(OTHER, new_chat("2")) == other
        reasons = [r["reason"] for r in registry.store.chats.skipped()]
        third = await registry.for_chat(("telegram", "3", "bot"), new_chat("3"))
    finally:
        await registry.aclose()
    assert len(reasons) == 4
    assert any("'../../etc'" in r for r in reasons)
    assert any(r.startswith("torn last line") for r in reasons)
    assert third not in (good, other)
    moved = list((tmp_path / "_quarantine").glob("chats.*.jsonl"))
    assert len(moved) == 1
    assert "not json at all" in moved[0].read_text()
    assert "../../etc" not in index.read_text()  # rewritten from the good lines
    registry = await open_registry(tmp_path)  # after a restart: still reported, still served
    try:
        assert await registry.for_chat(GOOD, new_chat("1")) == good
        again = registry.store.chats.skipped()
    finally:
        await registry.aclose()
    assert [r["moved_to"] for r in again] == [str(moved[0])]
    assert len(read_problems(tmp_path)) == 1  # what doctor reports


async def test_an_unreadable_index_is_moved_aside_and_rebuilt_from_the_snapshots(
    tmp_path: Path,
) -> None:
    good, other = await two_chats(tmp_path)
    (tmp_path / "chats.jsonl").write_bytes(b"\x00\xff garbage \xfe\n" * 3)
    registry = await open_registry(tmp_path)
    try:
        assert await registry.for_chat(GOOD, new_chat("1")) == good
        assert await registry.for_chat(OTHER, new_chat("2")) == other
        skipped = registry.store.chats.skipped()
    finally:
        await registry.aclose()
    assert len(skipped) == 3
    assert all("moved_to" in r for r in skipped)


async def test_an_ended_chat_is_not_mapped_again_by_the_rebuild(tmp_path: Path) -> None:
    await two_chats(tmp_path)
    registry = await open_registry(tmp_path)
    try:
        await registry.end_chat(GOOD)
    finally:
        await registry.aclose()
    (tmp_path / "chats.jsonl").write_text("{{{\n")
    registry = await open_registry(tmp_path)
    try:
        assert await registry.chat_session(GOOD) is None
        assert await registry.chat_session(OTHER) is not None
    finally:
        await registry.aclose()


@pytest.mark.parametrize(
    ("key", "session_id"),
    [(("telegram", "", "bot"), "s1"), (("telegram", "1", "bot"), "../x"), (("a", "b"), "s1")],
)
def test_an_entry_the_reader_would_skip_is_never_written(
    tmp_path: Path, key: tuple[str, ...], session_id: str
) -> None:
    index = ChatIndex(tmp_path)
    with pytest.raises(ValueError):
        index.set(key, session_id)  # type: ignore[arg-type]
    assert not index.path.exists()


def test_an_append_after_a_torn_line_is_not_glued_onto_it(tmp_path: Path) -> None:
    index = ChatIndex(tmp_path)
    index.set(GOOD, "s1")
    with index.path.open("a") as fh:
        fh.write('{"key": ["torn"')
    index.set(OTHER, "s2")
    fresh = ChatIndex(tmp_path)
    fresh.load()
    assert fresh.get(OTHER) == "s2"
    assert fresh.get(GOOD) == "s1"


@pytest.mark.parametrize("how", ["deleted", "quarantined by hand"])
async def test_a_chat_whose_session_is_gone_is_reported_then_served_by_a_new_session(
    tmp_path: Path, how: str
) -> None:
    gone, other = await two_chats(tmp_path)
    if how == "deleted":
        shutil.rmtree(tmp_path / gone)
    else:
        (tmp_path / "_quarantine").mkdir()
        (tmp_path / gone).rename(tmp_path / "_quarantine" / gone)
    [found] = read_problems(tmp_path)  # doctor, before any start
    assert gone in found["reason"]
    registry = await open_registry(tmp_path)
    try:
        [reported] = registry.store.chats.skipped()  # /readyz's skipped_records.chat_index
        assert reported["record"] == found["record"]
        assert set(reported) == {"record", "reason"}  # nothing was moved
        assert gone in reported["reason"]
        assert str(list(GOOD)) in reported["record"]
        fresh = await registry.for_chat(GOOD, new_chat("1"))  # the chat's next message
        await registry.handle(fresh).add_user_message(content="still here?")
        said = [m.content for m in await registry.handle(fresh).messages()]
        assert await registry.for_chat(OTHER, new_chat("2")) == other
        after = registry.store.chats.skipped()
    finally:
        await registry.aclose()
    assert fresh != gone
    assert said == ["still here?"]
    assert after == []  # replaced: no longer reported
    registry = await open_registry(tmp_path)  # after a restart: the new mapping holds
    try:
        assert registry.store.chats.skipped() == []
        assert await registry.chat_session(GOOD) == fresh
    finally:
        await registry.aclose()
    assert read_problems(tmp_path) == []
