"""A session's original task: its first user message, wherever that message is now.

The summaries tier pins the task (``session.memory``). ``SessionState`` takes it from the
first ``user_message`` it applies, which is right while a session is replayed from its
start; ``state.yaml`` then keeps it. A snapshot without one (the reference's ``state.json``,
or ours written before the tier existed) is replayed only from ``checkpoint_seq``, so the
first message *replayed* is not the first one sent: the earlier ones rolled over to
``events.archive.jsonl``, are still in the live log before the checkpoint, or (discarded)
survive only in the snapshot's conversation. ``original_task`` looks in that order, oldest
first, and reads the archive only as far as its first user message.
"""

from __future__ import annotations

from duragent.core.events import Event
from duragent.core.messages import Role, is_steering
from duragent.core.payloads import EventType, UserMessageData
from duragent.core.snapshot import SessionSnapshot
from duragent.store.protocols import SessionLog

__all__ = ["original_task"]


def original_task(log: SessionLog, snapshot: SessionSnapshot) -> str | None:
    """The first user message of the whole conversation, for a snapshot that lacks its task.

    None when the snapshot holds a task already, when everything is replayed anyway
    (``replay_from_seq`` 0: the replay finds it), or when no user message precedes the
    replay (then the first replayed one is the first).
    """
    if snapshot.task is not None:
        return snapshot.task
    start = snapshot.replay_from_seq
    if start <= 0:
        return None
    archived = log.first_archived(EventType.USER_MESSAGE.value)
    if archived is not None and archived.seq <= start:
        return _content(archived)
    live, _ = log.read(0)
    for event in live:
        if event.seq > start:
            break
        if event.type == EventType.USER_MESSAGE:
            return _content(event)
    for message in snapshot.conversation:
        if message.role is Role.USER and not is_steering(message):
            return message.text
    return None


def _content(event: Event) -> str:
    return UserMessageData.of(event.data).content
