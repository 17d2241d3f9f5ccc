"""A session's state and its files: durable records, snapshots, rollover, recovery.

The journal is what the session actor owns; it is used from the actor's thread only.

Durability: *durable* events (user message, final reply, status changes, approval changes,
errors, deliveries) are written and made durable before ``record`` returns; if the write
fails the event is withdrawn (its seq is reused), the state is unchanged, and the error is
raised. Batched events (tool results inside a turn) are applied at once and written with the
next flush; a failed flush keeps them queued in order and retries, so ``seq`` has no gaps or
duplicates. A snapshot is written on status and approval changes, when the session stops, and
otherwise once at least ``SNAPSHOT_EVERY`` events *and* a quarter of the last snapshot's size
have been appended since the last one: a long conversation's state.yaml is large, and
rewriting it every 50 small events would make each event cost a rewrite of the whole window
(write amplification stays ≤ ~4×; recovery replays at most that quarter). After a snapshot,
events up to ``checkpoint_seq`` roll over out of the live log per the session's mode.

Recovery (``load``): snapshot + replay of the log after ``checkpoint_seq`` through the same
``SessionState.apply`` as the live path, then interrupted tool calls get a persisted
"interrupted" result and a session left running is settled. Events the snapshot says were
written but that cannot be found (``store.integrity``) are taken from the archive or the
session is refused (quarantine), never resumed without them (``replay`` reads them). A
snapshot without the session's original task (the reference's) gets the first user message
of the whole conversation, archive included, not the first one replayed
(``store.original_task``).

Storage failures: an ``OSError`` of the machine (full, permission, I/O, descriptors) becomes
a ``StorageError`` naming the file, and each write reports to ``store.health`` (``/readyz``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from duragent.core.events import Event, now_rfc3339
from duragent.core.snapshot import DEFAULT_SILENT_BUFFER_CAP, SessionSnapshot, SessionStatus
from duragent.session.replay import events_after, rebuild_without_snapshot
from duragent.session.state import INTERRUPTED_RESULT, SessionState
from duragent.store import (
    SessionLog,
    SessionSnapshots,
    SessionStorage,
    SharedStorage,
    storage_error,
)
from duragent.store.original_task import original_task

__all__ = ["BATCH_SIZE", "SNAPSHOT_EVERY", "Journal", "NewSession"]

log = logging.getLogger(__name__)

BATCH_SIZE = 10
SNAPSHOT_EVERY = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSession:
    """What a brand-new session starts with."""

    agent: str
    on_disconnect: str = "pause"
    gateway: str | None = None
    gateway_chat_id: str | None = None
    gateway_chat_type: str | None = None
    message_limit: int = 1000
    rollover: str | None = None
    """``archive | discard | disabled`` (the agent's ``compaction`` field); None: the default."""
    silent_cap: int = DEFAULT_SILENT_BUFFER_CAP
    """The context buffer's bound (the agent's ``context_buffer.max_messages``)."""
    tokens_day: str = ""
    tokens_today: int = 0
    """The model tokens the chat's previous session used on ``tokens_day``: the daily quota
    is the chat's (``tokens_per_chat_per_day``), so ``/reset`` or a TTL end must not renew it."""


class Journal:
    """One session's state and files (see module docstring). Not thread-safe: one owner."""

    def __init__(
        self,
        store: SessionStorage,
        session_id: str,
        *,
        default_rollover: str = "archive",
        after_snapshot: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self.session_id = session_id
        self._default_rollover = default_rollover
        self._after_snapshot = after_snapshot
        self._state: SessionState | None = None
        self._queue: list[Event] = []
        self._log: SessionLog = store.event_log(session_id)
        self._snapshots: SessionSnapshots = store.snapshot(session_id)
        self._last_snapshot_seq = 0
        self._bytes_at_snapshot = 0

    @property
    def io_seconds(self) -> float:
        """Seconds spent in durable writes so far, log and snapshots (admission adapts)."""
        return self._log.io_seconds + self._snapshots.io_seconds

    @property
    def loaded(self) -> bool:
        """Whether the session was created or loaded successfully."""
        return self._state is not None

    def close(self) -> None:
        """Close the open log (the owner stops)."""
        self._log.close()

    def events(self, after_seq: int = 0, include_archive: bool = False) -> list[Event]:
        """Persisted events after ``after_seq`` (archive first when asked)."""
        self.flush()
        try:
            live, _ = self._log.read(after_seq)
            if not include_archive:
                return live
            archived = [e for e in self._log.read_archive() if e.seq > after_seq]
        except OSError as exc:
            raise storage_error(f"reading the history of session {self.session_id}", exc) from exc
        first_live = live[0].seq if live else None
        return [e for e in archived if first_live is None or e.seq < first_live] + live

    # --- creation and recovery ------------------------------------------------------------

    def create(self, new: NewSession) -> None:
        """Create the folder, the first event and the first snapshot (all durable).

        If the disk refuses any of it, the folder is removed again (its id was never given
        out) and ``StorageError`` is raised.
        """
        try:
            self._create(new)
        except OSError as exc:
            self._state = None
            self._log.close()
            if not isinstance(exc, FileExistsError):  # the folder is ours: mkdir made it
                self._discard_new()
            raise storage_error(f"creating session {self.session_id}", exc) from exc

    def _discard_new(self) -> None:
        """Remove what a failed creation left, without hiding why it failed.

        The clean-up meets the same fault as often as not (the database away, the disk
        refusing): its error would replace the creation's, and the client would read
        "discarding new session" for a request that created one. The clean-up failing leaves
        what it left before this method existed (a folder or row without a snapshot, listed
        as unavailable; its id was never given out); it is logged.
        """
        try:
            self._store.discard_new(self.session_id)
        except OSError as exc:
            log.warning(
                "session %s: could not remove the failed creation: %s", self.session_id, exc
            )

    def _create(self, new: NewSession) -> None:
        now = now_rfc3339()
        self._store.create(self.session_id)
        snapshot = SessionSnapshot(
            session_id=self.session_id,
            agent=new.agent,
            created_at=now,
            updated_at=now,
            on_disconnect=new.on_disconnect,
            gateway=new.gateway,
            gateway_chat_id=new.gateway_chat_id,
            gateway_chat_type=new.gateway_chat_type,
            actor_message_limit=new.message_limit,
            compaction=new.rollover,
            silent_buffer_cap=new.silent_cap,
            tokens_day=new.tokens_day,
            tokens_today=new.tokens_today,
        )
        self._state = SessionState(snapshot)
        self.record(
            Event.session_start(
                1,
                agent=new.agent,
                on_disconnect=new.on_disconnect,
                gateway=new.gateway,
                gateway_chat_id=new.gateway_chat_id,
                gateway_chat_type=new.gateway_chat_type,
            ),
            durable=True,
        )
        self.snapshot()

    def load(self) -> None:
        """Recover from disk (see module docstring).

        Raises ``SnapshotCorruptError`` (quarantine: the files cannot be trusted) or
        ``StorageError`` (the OS refused a read or write: nothing is moved, retry later).
        """
        try:
            self._load()
        except OSError as exc:
            raise storage_error(f"loading session {self.session_id}", exc) from exc

    def _load(self) -> None:
        if isinstance(self._store, SharedStorage):  # another node may own it (LeaseHeldError)
            self._store.own(self.session_id)  # claimed before reading: no write can follow ours
        self._store.remove_stale_temp_files(self.session_id)
        snapshot = self._snapshots.read()
        if snapshot is None:
            snapshot, events = rebuild_without_snapshot(self.session_id, self._log, self._snapshots)
        else:
            events = events_after(self.session_id, self._log, self._snapshots, snapshot)
            snapshot.task = original_task(self._log, snapshot)  # not the first replayed one
        state = SessionState(snapshot)
        for event in events:
            state.apply(event)
        self._state = state
        self._last_snapshot_seq = snapshot.last_event_seq
        self._repair_after_crash(state)

    def _repair_after_crash(self, state: SessionState) -> None:
        """Persist results for interrupted tool calls; settle a status left 'running'.

        Every turn that ends, however it ends (reply, error, cancellation, disconnect), gives
        its calls a result first, and a new turn closes any call an earlier one left open
        (``close_open_calls``). So the calls still open here are the tail of the one turn the
        crash cut short, and "interrupted by server restart" is what happened to them.
        """
        repaired = self.close_open_calls(INTERRUPTED_RESULT, durable=False) > 0
        if state.status is SessionStatus.RUNNING:
            target = (
                SessionStatus.ACTIVE if state.on_disconnect == "continue" else SessionStatus.PAUSED
            )
            self.record(
                Event.status_change(self.next_seq(), old=state.status.value, new=target.value),
                durable=False,
            )
            repaired = True
        if repaired:
            self.flush()
            self.snapshot()

    def close_open_calls(self, content: str, *, durable: bool = True) -> int:
        """Give every call still without a result the failed result ``content``.

        A pending approval's call is not open: it waits for its decision. When ``durable``,
        everything queued is written before this returns, closed calls or not. Returns how
        many calls were closed.
        """
        open_calls = self.state.outstanding_call_ids()
        for call_id in open_calls:
            event = Event.tool_result(
                self.next_seq(), call_id=call_id, success=False, content=content
            )
            self.record(event, durable=False)
        if durable:
            self._write_queue()
        return len(open_calls)

    @property
    def state(self) -> SessionState:
        """The loaded state (only valid after a successful start)."""
        assert self._state is not None
        return self._state

    def next_seq(self) -> int:
        """The seq the next event gets (after anything still queued)."""
        queued = self._queue[-1].seq if self._queue else self.state.last_seq
        return max(queued, self.state.last_seq) + 1

    def record(self, event: Event, *, durable: bool) -> int:
        """Queue ``event``; durable events are written before they change the state."""
        self._queue.append(event)
        if durable:
            try:
                self._write_queue()
            except BaseException:
                if self._queue and self._queue[-1] is event:
                    self._queue.pop()  # withdrawn: seq will be reused, state untouched
                raise
            self.state.apply(event)
        else:
            self.state.apply(event)
            if len(self._queue) >= BATCH_SIZE:
                try:
                    self._write_queue()
                except OSError as exc:
                    log.error("session %s: write failed, will retry: %s", self.session_id, exc)
        return event.seq

    def _write_queue(self) -> None:
        """Append and fsync everything queued; on failure the queue keeps it all, in order."""
        if not self._queue:
            return
        batch = list(self._queue)
        try:
            self._log.append(batch)
        except OSError as exc:  # rolled back by the log: nothing half-written stays
            error = storage_error(f"appending to {self._log.path}", exc)
            self._store.health.failed(error)
            raise error from exc
        self._store.health.succeeded()
        del self._queue[: len(batch)]

    def maintain(self) -> None:
        """Snapshot (and roll the log over) if one is due; the actor calls it after answering.

        A snapshot of a long window is a ~100 KB write and two fsyncs, and rolling the log
        over copies it to the archive: done inside an ask, every few turns a turn waited for
        it (``bench/loop.py``: a tool iteration after 1,000 messages cost 1.5× one after 1).
        Everything it writes is already durable in the log, so it can wait until the answer
        has gone; the next ask to this session queues behind it like behind any other.
        """
        if self._queue or self.state.last_seq - self._last_snapshot_seq < SNAPSHOT_EVERY:
            return
        if self._log.appended_bytes - self._bytes_at_snapshot < self._snapshots.last_size // 4:
            return
        try:
            self.snapshot()
        except OSError as exc:  # the log has everything; the next snapshot will catch up
            log.error("session %s: snapshot failed: %s", self.session_id, exc)

    def flush(self) -> None:
        """Write everything queued, then snapshot if one is due."""
        self._write_queue()
        self.maintain()

    def snapshot(self) -> None:
        """Write everything queued and a snapshot now; then roll the log over per the mode."""
        self._write_queue()
        state = self.state
        try:
            self._snapshots.write(state.to_snapshot(now_rfc3339()))
        except OSError as exc:  # the old state.yaml is intact (atomic replace)
            error = storage_error(f"writing {self._snapshots.path}", exc)
            self._store.health.failed(error)
            raise error from exc
        self._store.health.succeeded()
        self._last_snapshot_seq = state.last_seq
        self._bytes_at_snapshot = self._log.appended_bytes
        self._roll_over(state)
        if self._after_snapshot is not None:
            self._after_snapshot()

    def _roll_over(self, state: SessionState) -> None:
        """Move events up to ``checkpoint_seq`` out of the live log, per the session's mode.

        ``discard`` deletes only what neither the window nor the current summary's marker
        needs (``SessionState.discardable_seq``): the history API shows both from the log.

        The mode is the ``compaction`` field of the config (``archive | discard | disabled``);
        here it is called rollover, leaving "compaction" to LLM summaries. A failure is
        logged, not raised: the snapshot is written and every event is still in the live log
        (or already in the archive), so the next snapshot simply tries again.
        """
        mode = state.rollover or self._default_rollover
        archive = mode == "archive"
        up_to = state.checkpoint_seq if archive else state.discardable_seq()
        if up_to <= 0 or mode == "disabled":
            return
        try:
            self._log.roll_over(up_to, archive=archive)
        except OSError as exc:
            error = storage_error(f"rolling over {self._log.path}", exc)
            log.error("session %s: rollover failed: %s", self.session_id, error)
