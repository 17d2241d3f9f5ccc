"""The session actor: one pykka thread per live session, owning its state and its files.

All of a session's file I/O happens on this thread, so an fsync never blocks the event loop
and many sessions fsync in parallel. Requests arrive as ``bridge.Request`` messages and are
answered through their ``ActorReply``; an operation that fails answers with its exception
and the actor keeps running.

The durability rules, snapshots and recovery live in ``journal``; the operations a loaded
session serves in ``operations``; this module is the thread: start (create, or load and
quarantine what cannot be trusted), dispatch (a request carries its ``ops.Op``: the actor
runs its function, nothing is looked up by name), and ``close``.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pykka

from duragent.errors import DuragentError, StorageError
from duragent.observability.logctx import attach, detach
from duragent.session.admission import AskMix
from duragent.session.bridge import Request, SessionUnavailableError
from duragent.session.descriptors import is_out_of_descriptors
from duragent.session.journal import BATCH_SIZE, SNAPSHOT_EVERY, Journal, NewSession
from duragent.session.operations import SessionInfo, SessionOps, UserMessageResult
from duragent.session.ops import op
from duragent.store import FencedWriteError, SessionStorage, SnapshotCorruptError

if TYPE_CHECKING:
    from pykka._actor import ActorInbox  # the Protocol pykka types its inbox with

__all__ = [
    "BATCH_SIZE",
    "SNAPSHOT_EVERY",
    "NewSession",
    "SessionActor",
    "SessionInfo",
    "SessionQuarantinedError",
    "UserMessageResult",
]

log = logging.getLogger(__name__)


class SessionQuarantinedError(DuragentError):
    """The session's files could not be trusted; it was moved aside, not resumed empty.

    Raised for every request to it until it is restored (``duragent session restore``).
    """

    def __init__(self, session_id: str, reason: str) -> None:
        self.session_id = session_id
        self.reason = reason
        super().__init__(
            f"session {session_id} is quarantined: {reason}. Its files are kept in "
            f"sessions/_quarantine/{session_id}/; after fixing them, run "
            f"`duragent session restore {session_id}`"
        )


class SessionActor(SessionOps, pykka.ThreadingActor):
    """Owns one session (see module docstring). Create through ``SessionRegistry``."""

    use_daemon_thread = True

    @staticmethod
    def _create_actor_inbox() -> ActorInbox:
        """A C-level ``SimpleQueue`` instead of pykka's ``queue.Queue``.

        pykka only needs ``put``/``get``/``empty``; ``queue.Queue`` wraps them in Python code
        around a Condition, several GIL round trips per message on the hot path.
        """
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        return inbox

    def __init__(
        self,
        store: SessionStorage,
        session_id: str,
        *,
        new: NewSession | None = None,
        default_rollover: str = "archive",
        on_change: Callable[[SessionInfo], None] | None = None,
        mix: AskMix | None = None,
    ) -> None:
        super().__init__()
        self._mix = mix
        self._store = store
        self.session_id = session_id
        self._new = new
        self._on_change = on_change
        self._failure: DuragentError | OSError | None = None
        self._closed = False
        self._journal = Journal(
            store,
            session_id,
            default_rollover=default_rollover,
            after_snapshot=self._notify if on_change is not None else None,
        )

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change(self.info())

    # --- lifecycle ----------------------------------------------------------------------

    def on_start(self) -> None:
        """Create or load the session on the actor's own thread."""
        self._start()

    def _start(self) -> None:
        try:
            if self._new is not None:
                self._journal.create(self._new)
            else:
                self._journal.load()
        except SnapshotCorruptError as exc:
            try:
                self._store.quarantine(self.session_id, str(exc))
            except OSError as move_failed:  # left in place: refused now, checked again later
                self._failure = StorageError(f"quarantining {self.session_id}", move_failed)
                log.error("session %s: %s (%s)", self.session_id, move_failed, exc)
                return
            self._failure = SessionQuarantinedError(self.session_id, str(exc))
        except DuragentError as exc:  # StorageError too: nothing moved; the next start retries
            self._failure = exc
        except Exception as exc:
            if isinstance(exc, OSError) and is_out_of_descriptors(exc):
                # kept as is (errno and all): the registry makes room and retries
                log.info("session %s could not start yet: %s", self.session_id, exc)
                self._failure = exc
                return
            log.exception("session %s failed to start", self.session_id)
            self._failure = DuragentError(f"session {self.session_id} failed to start: {exc}")

    def on_stop(self) -> None:
        """Flush, snapshot, and fail anything still queued for this actor."""
        self._final_write()
        self._fail_queued()

    def _final_write(self) -> None:
        if not self._journal.loaded or self._closed:
            self._journal.close()
            return
        self._closed = True
        try:
            self._journal.snapshot()
        except FencedWriteError as exc:  # another node owns it now: nothing to flush here
            log.warning("session %s: not flushed on stop: %s", self.session_id, exc)
        except Exception:
            log.exception("session %s: final flush failed", self.session_id)
        finally:
            self._journal.close()

    def on_failure(self, *_: Any) -> None:
        """Never expected (every op is caught), but never leave callers hanging."""
        self._fail_queued()

    def _fail_queued(self) -> None:
        inbox = self.actor_inbox
        while not inbox.empty():
            envelope = inbox.get()
            message = getattr(envelope, "message", None)
            if isinstance(message, Request) and message.reply is not None:
                message.reply.set_exception(
                    SessionUnavailableError(f"session {self.session_id} stopped")
                )

    def on_receive(self, message: Any) -> Any:
        """Run a ``Request``'s op on this actor and answer it."""
        if not isinstance(message, Request):
            return None
        mix = self._mix
        if mix is None:
            return self._handle(message)
        start, disk = time.perf_counter(), self._journal.io_seconds
        self._handle(message)
        mix.observe(self._journal.io_seconds - disk, time.perf_counter() - start)
        return None

    def _handle(self, message: Request) -> Any:
        token = attach(message.log)  # this thread's lines name the sender's turn (logctx)
        try:
            return self._dispatch(message)
        finally:
            detach(token)

    def _dispatch(self, message: Request) -> Any:
        op = message.op
        try:
            if self._failure is not None and op is not SessionActor.close:
                raise self._failure
            if self._closed:
                raise SessionUnavailableError(f"session {self.session_id} stopped")
            result = op.fn(self, *message.args, **message.kwargs)
        except BaseException as exc:
            if message.reply is not None:
                message.reply.set_exception(exc)
            elif not isinstance(exc, Exception):
                raise
            else:
                log.exception("session %s: %s failed", self.session_id, op.name)
            return None
        if message.reply is not None:
            message.reply.set_result(result)
        if self._journal.loaded and not self._closed and self._failure is None:
            self._journal.maintain()  # after the answer: nobody waits for a snapshot
        return None

    # --- lifecycle op (the others are in ``operations``) ---------------------------------

    @op(retry_safe=False)  # asked by the launcher and the evictor, never through ``call``
    def close(self, if_idle: bool = False) -> bool:
        """Flush, snapshot and stop; when this returns the files are final.

        The writes happen here rather than in ``on_stop`` so the caller may start a new actor
        for the same session as soon as the answer arrives, with no writer racing it.
        ``if_idle`` (eviction) refuses, answering False, while a tool call awaits its result:
        a restart would record the call as interrupted. The one op an actor that failed to
        start still serves (it must be stopped too).
        """
        if if_idle and self._journal.loaded and self.state.outstanding_call_ids():
            return False
        self._final_write()
        self.stop()
        return True
