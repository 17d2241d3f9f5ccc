"""A session answers first and snapshots after: no turn waits for a snapshot of its window.

The snapshot (state.yaml, written atomically) is held up on a real file system by a FileOps
that blocks replacing it until the test lets it go; the ask that made the snapshot due must
already have been answered by then, and the next ask simply queues behind the snapshot.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.journal import SNAPSHOT_EVERY
from duragent.store import SessionStore
from duragent.store.fileops import OsFileOps


class HeldSnapshots(OsFileOps):
    """Blocks the rename that puts a new state.yaml in place until ``release`` is set."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def replace(self, source: Path, target: Path) -> None:
        if target.name == "state.yaml":
            self.entered.set()
            self.release.wait(120)
        super().replace(source, target)


async def test_the_ask_that_makes_a_snapshot_due_is_answered_before_the_snapshot(
    tmp_path: Path,
) -> None:
    ops = HeldSnapshots()
    ops.release.set()  # creating a session writes its first state.yaml: let that one through
    registry = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=30))
    await registry.open()
    session = registry.handle(await registry.create(NewSession(agent="a")))
    ops.entered.clear()
    ops.release.clear()
    answered = 0
    snapshotting = False
    while not snapshotting:
        await asyncio.wait_for(session.add_user_message(f"message {answered}"), 120)
        answered += 1
        assert answered <= 2 * SNAPSHOT_EVERY, "no snapshot became due"
        snapshotting = await asyncio.to_thread(ops.entered.wait, 0.05)
    # the snapshot is under way and held; the ask that made it due came back regardless
    queued = asyncio.ensure_future(session.add_user_message("after the snapshot"))
    await asyncio.sleep(0.2)
    assert not queued.done()  # the next ask waits for the actor, which is writing
    ops.release.set()
    await asyncio.wait_for(queued, 120)
    await registry.aclose()
    restarted = SessionRegistry(SessionStore(tmp_path), RegistrySettings())
    await restarted.open()
    texts = [m.text for m in await restarted.handle(session.session_id).messages()]
    assert texts[-1] == "after the snapshot"
    assert len(texts) == answered + 1
    await restarted.aclose()
