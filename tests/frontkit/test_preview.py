"""``ReplyStream``: a reply shown as it is written, through a port that records what it did.

The turn's side is driven by calling the sink as the turn loop does (``opened``, ``token``,
``tool_call``…); the delivery's side as ``Delivery`` does (``finish``, ``close``,
``discard``). The port is a ``PreviewPort`` in memory; the records are real files.
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.agents import AgentCatalog, load_catalog
from duragent.core.messages import ToolCall
from duragent.frontkit import ChatRef, SentMessage
from duragent.frontkit.outbox import PlatformBusyError
from duragent.frontkit.preview import Previews, ReplyStream
from duragent.frontkit.preview_store import PreviewStore
from tests.polling import eventually

CHAT = ChatRef("memory", "42")


class MemoryPreviews:
    """A ``PreviewPort`` that keeps what a chat would show and what it was asked to do."""

    preview_rate = 1000.0

    def __init__(self, store: PreviewStore) -> None:
        self.store = store
        self.calls: list[tuple[str, str, str]] = []  # (what, message id, text)
        self.texts: dict[str, str] = {}  # message id → text shown now
        self.recorded_at_edits: list[bool] = []  # was the preview on disk at each edit?
        self.busy_edits = 0  # edits to refuse with "not now"

    def preview_every(self, chat: ChatRef) -> float:
        return 0.0

    def preview_text(self, text: str) -> str:
        return text.strip()[:20]

    async def send_preview(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        mid = str(len(self.texts) + 1)
        self.texts[mid] = self.preview_text(text)
        self.calls.append(("send", mid, self.texts[mid]))
        return SentMessage(chat, mid)

    async def edit_preview(self, message: SentMessage, text: str) -> None:
        if self.busy_edits:
            self.busy_edits -= 1
            raise PlatformBusyError("not now", retry_after=0.01)
        self.recorded_at_edits.append(bool(self.store.load(CHAT.gateway)))
        self.texts[message.message_id] = self.preview_text(text)
        self.calls.append(("edit", message.message_id, self.texts[message.message_id]))

    async def finish_preview(
        self, message: SentMessage, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        self.texts[message.message_id] = text
        self.calls.append(("finish", message.message_id, text))
        return message

    async def delete_message(self, message: SentMessage) -> None:
        del self.texts[message.message_id]
        self.calls.append(("delete", message.message_id, ""))

    def did(self, what: str) -> list[tuple[str, str, str]]:
        return [c for c in self.calls if c[0] == what]


def catalog(root: Path, *, stream: bool) -> AgentCatalog:
    folder = root / "agents" / "bot"
    folder.mkdir(parents=True)
    spec = {
        "model": {"provider": "fake", "name": "m", "base_url": "http://127.0.0.1:9/v1"},
        "session": {"stream_replies": stream},
    }
    manifest = {"apiVersion": "duragent/v1alpha1", "kind": "Agent", "metadata": {"name": "bot"}}
    (folder / "agent.yaml").write_text(json.dumps({**manifest, "spec": spec}))
    found = load_catalog(root / "agents")
    assert not found.broken, found.broken
    return found


def previews(root: Path, *, stream: bool = True, first_after: float = 0.0) -> Previews:
    agents = catalog(root, stream=stream)
    store = PreviewStore(root / "previews")
    return Previews(MemoryPreviews(store), store, lambda: agents, first_after=first_after)


def port_of(kit: Previews) -> MemoryPreviews:
    assert isinstance(kit.port, MemoryPreviews)
    return kit.port


async def streaming(kit: Previews, *pieces: str) -> ReplyStream:
    """A stream whose turn runs for ``bot`` and has written ``pieces``."""
    stream = kit.stream(CHAT, "s1", "p7")
    await stream.opened("bot", "pause")
    for piece in pieces:
        await stream.token(piece)
    return stream


async def test_a_reply_written_within_the_wait_goes_whole_without_a_preview(
    tmp_path: Path,
) -> None:
    kit = previews(tmp_path, first_after=3600)
    stream = await streaming(kit, "Hello", " there", ", all of it at once.")
    assert await stream.finish("Hello there, all of it at once.") is None
    await stream.close()
    assert port_of(kit).calls == []


async def test_an_agent_that_does_not_stream_gets_no_preview(tmp_path: Path) -> None:
    kit = previews(tmp_path, stream=False)
    stream = await streaming(kit, "Hello", " there", " and more")
    assert await stream.finish("Hello there and more") is None
    assert port_of(kit).calls == []


async def test_a_preview_is_recorded_before_its_first_edit_and_the_reply_replaces_it(
    tmp_path: Path,
) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    stream = await streaming(kit, "Hel", "lo")
    assert await eventually(lambda: bool(port.did("send")))
    await stream.token(" world")
    assert await eventually(lambda: bool(port.did("edit")))
    sent = await stream.finish("**Hello** world!")
    await stream.close()
    assert sent == SentMessage(CHAT, "1")
    assert port.calls[0] == ("send", "1", "Hello")
    assert port.did("edit")[-1] == ("edit", "1", "Hello world")
    assert port.calls[-1] == ("finish", "1", "**Hello** world!")
    assert port.recorded_at_edits
    assert all(port.recorded_at_edits)
    assert kit.store.load(CHAT.gateway) == []  # the reply is final: nothing left to recover


async def test_a_tool_call_leaves_the_text_before_it_in_place_and_a_new_preview_follows(
    tmp_path: Path,
) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    stream = await streaming(kit, "Let me", " look.")
    assert await eventually(lambda: bool(port.did("send")))
    await stream.tool_call(ToolCall(id="c1", name="bash", arguments="{}"))
    for piece in ("Found", " it."):
        await stream.token(piece)
    assert await eventually(lambda: len(port.did("send")) == 2)
    await stream.finish("Found it.")
    await stream.close()
    assert ("finish", "1", "Let me look.") in port.calls
    assert port.calls[-1] == ("finish", "2", "Found it.")
    assert port.texts == {"1": "Let me look.", "2": "Found it."}
    assert kit.store.load(CHAT.gateway) == []


async def test_an_approval_request_ends_the_preview_with_the_text_so_far(tmp_path: Path) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    stream = await streaming(kit, "I will", " delete it.")
    assert await eventually(lambda: bool(port.did("send")))
    await stream.approval_required("c1", "rm -rf build")
    await stream.settle()
    assert port.calls[-1] == ("finish", "1", "I will delete it.")
    assert kit.store.load(CHAT.gateway) == []


async def test_a_turn_without_a_reply_deletes_its_preview_and_record(tmp_path: Path) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    stream = await streaming(kit, "Half", " a reply")
    assert await eventually(lambda: bool(port.did("send")))
    await stream.discard()
    assert port.calls[-1] == ("delete", "1", "")
    assert port.texts == {}
    assert kit.store.load(CHAT.gateway) == []


async def test_a_refused_edit_only_slows_the_preview(tmp_path: Path) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    port.busy_edits = 2
    stream = await streaming(kit, "One", " two")
    assert await eventually(lambda: bool(port.did("send")))
    await stream.token(" three")
    assert await eventually(lambda: bool(port.did("edit")))
    await stream.finish("One two three.")
    assert port.busy_edits == 0
    assert port.did("edit") == [("edit", "1", "One two three")]
    assert port.texts == {"1": "One two three."}


async def test_a_stopped_stream_leaves_its_preview_to_the_next_start(tmp_path: Path) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    stream = await streaming(kit, "Cut", " short")
    assert await eventually(lambda: bool(kit.store.load(CHAT.gateway)))
    stream.stop()
    [record] = kit.store.load(CHAT.gateway)
    assert (record.session_id, record.message) == ("s1", SentMessage(CHAT, "1"))

    again = Previews(port, kit.store, lambda: catalog(tmp_path / "again", stream=True))
    left = await again.recovered(CHAT.gateway)
    assert list(left) == ["s1"]
    assert await left["s1"].finish("The reply, whole.") == SentMessage(CHAT, "1")
    await left["s1"].close()
    assert port.texts == {"1": "The reply, whole."}
    assert again.store.load(CHAT.gateway) == []


async def test_older_previews_of_a_session_are_deleted_when_recovered(tmp_path: Path) -> None:
    kit = previews(tmp_path)
    port = port_of(kit)
    for shown in (1, 2):
        stream = await streaming(kit, "Half", " of it")

        def recorded(n: int = shown) -> bool:
            return len(kit.store.load(CHAT.gateway)) == n

        assert await eventually(recorded)
        stream.stop()
    left = await kit.recovered(CHAT.gateway, {"s1"})
    assert port.did("delete") == [("delete", "1", "")]
    await left["s1"].discard()
    assert port.texts == {}
    assert kit.store.load(CHAT.gateway) == []


async def test_previews_of_other_sessions_and_gateways_are_not_recovered(tmp_path: Path) -> None:
    kit = previews(tmp_path)
    stream = await streaming(kit, "Half", " of it")
    assert await eventually(lambda: bool(kit.store.load(CHAT.gateway)))
    stream.stop()
    assert await kit.recovered(CHAT.gateway, {"another"}) == {}
    assert await kit.recovered("telegram") == {}
    assert len(kit.store.load(CHAT.gateway)) == 1
