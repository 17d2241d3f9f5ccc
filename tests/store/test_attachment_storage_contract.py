"""The ``AttachmentStorage`` contract: one suite, run against every backend.

What the layers above rely on when a message carries a photo, a voice note or a file: the
bytes are kept by their SHA-256, durably and all or nothing, once however often they are put,
only in a live session, gone with it, moved with it by quarantine, and never reachable by a
name that is not a content hash. Each test runs for the file backend (``SessionStore``), the
in-memory one (``MemorySessionStore``) and PostgreSQL (``PostgresSessionStore``, on a fresh
schema of the test database: ``tests/store/postgres_db.py``).

A backend also says what a crash in the middle of a put leaves (``Backend.tear``): a
half-written temporary file for the files, a transaction that never committed for
PostgreSQL, nothing for memory. The real crash (a SIGKILLed process) is in
``test_attachment_blobs.py`` and ``postgres/test_attachment_rows.py``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from duragent.core.attachments import content_hash
from duragent.core.events import Event
from duragent.store import AttachmentNotFoundError, MemorySessionStore, SessionStorage, SessionStore
from duragent.store.atomic import temp_path
from duragent.store.attachment_blobs import ATTACHMENTS_DIRNAME, PROCESS_STARTED

PHOTO = bytes(range(256)) * 64 + b"\x00end"
"""Every byte value, NUL included: blobs are bytes, never text."""
VOICE = b"OggS" + os.urandom(3000)


@dataclass
class Backend:
    """A backend under test: stores over the same data, and what a crash mid-put leaves."""

    name: str
    make: Callable[[], SessionStorage]
    """A store object over the same data, opened (a restarted process's view)."""
    tear: Callable[[SessionStorage, str, bytes], None]
    """Leave what a crash in the middle of ``put(data)`` into the session leaves."""
    leftovers: Callable[[SessionStorage, str], list[str]]
    """What such crashes left that is still there (temporary files)."""
    opened: list[SessionStorage] = field(default_factory=list)

    def open(self) -> SessionStorage:
        store = self.make()
        self.opened.append(store)
        return store


class _CutShortError(Exception):
    """The crash: the transaction is left before COMMIT."""


def _file_tear(store: SessionStorage, sid: str, data: bytes) -> None:
    assert isinstance(store, SessionStore)
    folder = store.directory(sid) / ATTACHMENTS_DIRNAME
    folder.mkdir(exist_ok=True)
    torn = temp_path(folder / content_hash(data))  # the name atomic_write gives it
    torn.write_bytes(data[: len(data) // 2])
    before = PROCESS_STARTED - 60  # written by the process that crashed
    os.utime(torn, (before, before))


def _file_leftovers(store: SessionStorage, sid: str) -> list[str]:
    assert isinstance(store, SessionStore)
    return sorted(p.name for p in (store.directory(sid) / ATTACHMENTS_DIRNAME).glob("*.tmp"))


def _postgres_tear(store: SessionStorage, sid: str, data: bytes) -> None:
    from duragent.store.postgres import PostgresSessionStore

    assert isinstance(store, PostgresSessionStore)
    with contextlib.suppress(_CutShortError), store.db.transaction("a put cut short") as conn:
        conn.execute(
            "INSERT INTO attachments (session_key, sha256, content) SELECT session_key, %s, %s "
            "FROM sessions WHERE session_id = %s AND quarantined_at IS NULL",
            (content_hash(data), data[: len(data) // 2], sid),
        )
        raise _CutShortError


def _nothing_torn(store: SessionStorage, sid: str, data: bytes) -> None:
    """A dict assignment cannot be cut halfway."""


def _no_leftovers(store: SessionStorage, sid: str) -> list[str]:
    return []


@pytest.fixture(params=["files", "memory", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "files":

        def make_files() -> SessionStorage:
            store = SessionStore(tmp_path / "sessions")
            store.open()
            return store

        yield Backend("files", make_files, _file_tear, _file_leftovers)
        return
    if request.param == "memory":
        memory = MemorySessionStore()  # nothing outlives the process: "reopened" is itself
        yield Backend("memory", lambda: memory, _nothing_torn, _no_leftovers)
        return
    from duragent.store.postgres import PostgresSessionStore
    from tests.store import postgres_db  # skips without the driver or a server

    with postgres_db.fresh_schema() as schema, contextlib.ExitStack() as stack:

        def make_postgres() -> SessionStorage:
            db = stack.enter_context(postgres_db.database(schema))
            store = PostgresSessionStore(db, node_id="test-node")
            store.open()
            return store

        made = Backend("postgres", make_postgres, _postgres_tear, _no_leftovers)
        yield made
        for store in made.opened:
            store.close()


@pytest.fixture
def store(backend: Backend) -> SessionStorage:
    return backend.open()


def created(store: SessionStorage, session_id: str = "s1") -> str:
    store.create(session_id)
    store.event_log(session_id).append([Event.user_message(1, content="look")])
    return session_id


# --- put, read back ------------------------------------------------------------------------


def test_a_put_blob_reads_back_under_its_sha256(store: SessionStorage) -> None:
    blobs = store.attachments(created(store))
    sha = blobs.put(PHOTO)
    assert sha == content_hash(PHOTO)
    assert blobs.has(sha)
    assert blobs.read(sha) == PHOTO
    assert blobs.size(sha) == len(PHOTO)
    assert blobs.hashes() == [sha]


def test_the_same_bytes_put_twice_are_one_blob(store: SessionStorage) -> None:
    blobs = store.attachments(created(store))
    first = blobs.put(PHOTO)
    assert blobs.put(PHOTO) == first
    assert store.attachments("s1").put(PHOTO) == first  # another view, the same blob
    assert blobs.hashes() == [first]
    assert blobs.read(first) == PHOTO


def test_every_blob_is_listed_sorted_by_hash(store: SessionStorage) -> None:
    blobs = store.attachments(created(store))
    shas = [blobs.put(data) for data in (PHOTO, VOICE, b"", b"%PDF-1.7")]
    assert blobs.hashes() == sorted(shas)
    assert blobs.size(content_hash(b"")) == 0
    assert blobs.read(content_hash(b"")) == b""


def test_a_large_blob_reads_back_whole(store: SessionStorage) -> None:
    data = os.urandom(6 << 20)
    blobs = store.attachments(created(store))
    assert blobs.read(blobs.put(data)) == data


def test_sessions_do_not_see_each_others_blobs(store: SessionStorage) -> None:
    sha = store.attachments(created(store, "s1")).put(PHOTO)
    other = store.attachments(created(store, "s2"))
    assert not other.has(sha)
    assert other.hashes() == []
    with pytest.raises(AttachmentNotFoundError):
        other.read(sha)


def test_a_blob_survives_reopening_the_store(backend: Backend, store: SessionStorage) -> None:
    sha = store.attachments(created(store)).put(VOICE)
    again = backend.open()
    assert again.attachments("s1").read(sha) == VOICE


# --- unknown and refused hashes ------------------------------------------------------------


def test_an_unknown_hash_is_not_found(store: SessionStorage, tmp_path: Path) -> None:
    blobs = store.attachments(created(store))
    missing = content_hash(b"never stored")
    assert not blobs.has(missing)
    with pytest.raises(AttachmentNotFoundError, match=missing) as caught:
        blobs.read(missing)
    assert isinstance(caught.value, LookupError)
    with pytest.raises(AttachmentNotFoundError):
        blobs.size(missing)
    with pytest.raises(AttachmentNotFoundError):
        blobs.export(missing, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


BAD = [
    "",
    "..",
    "../../etc/passwd",
    "0" * 63,
    "0" * 65,
    "A" * 64,
    "0" * 64 + ".tmp",
    "0" * 63 + "/",
    "0" * 64 + "\n",
    "attachments",
]


@pytest.mark.parametrize("bad", BAD)
def test_anything_but_a_content_hash_is_refused_before_it_is_used(
    store: SessionStorage, bad: str, tmp_path: Path
) -> None:
    blobs = store.attachments(created(store))
    blobs.put(PHOTO)
    for use in (blobs.has, blobs.read, blobs.size):
        with pytest.raises(ValueError, match="not an attachment hash"):
            use(bad)
    with pytest.raises(ValueError, match="not an attachment hash"):
        blobs.export(bad, tmp_path / "copy")


# --- export: a copy for code that reads files ------------------------------------------------


def test_an_export_is_a_copy_that_can_be_changed_freely(
    store: SessionStorage, tmp_path: Path
) -> None:
    blobs = store.attachments(created(store))
    sha = blobs.put(PHOTO)
    dest = tmp_path / "files" / "holiday.jpg"
    dest.parent.mkdir()
    dest.write_bytes(b"an older copy")
    blobs.export(sha, dest)
    assert dest.read_bytes() == PHOTO
    dest.write_bytes(b"changed by a tool")
    assert blobs.read(sha) == PHOTO
    assert [p.name for p in dest.parent.iterdir()] == ["holiday.jpg"]  # no temp file left


# --- the session's lifecycle ---------------------------------------------------------------


def test_blobs_are_deleted_with_their_session(store: SessionStorage) -> None:
    sha = store.attachments(created(store)).put(PHOTO)
    store.delete("s1")
    assert not store.attachments("s1").has(sha)
    assert store.attachments("s1").hashes() == []
    created(store)  # a new session with the same id starts without them
    assert store.attachments("s1").hashes() == []


def test_a_blob_is_put_only_into_a_live_session(store: SessionStorage) -> None:
    with pytest.raises(FileNotFoundError):
        store.attachments("never-created").put(PHOTO)
    store.attachments(created(store)).put(VOICE)
    store.delete("s1")
    with pytest.raises(FileNotFoundError):
        store.attachments("s1").put(PHOTO)
    assert "s1" not in store.list_ids()  # the put did not bring the session back


def test_quarantine_and_restore_take_the_blobs_along(store: SessionStorage) -> None:
    sha = store.attachments(created(store)).put(PHOTO)
    store.quarantine("s1", "checked by hand")
    assert not store.attachments("s1").has(sha)
    with pytest.raises(FileNotFoundError):
        store.attachments("s1").put(VOICE)
    store.restore("s1")
    assert store.attachments("s1").read(sha) == PHOTO
    assert store.attachments("s1").hashes() == [sha]


def test_rolling_the_event_log_over_leaves_the_blobs_alone(store: SessionStorage) -> None:
    sid = created(store)
    sha = store.attachments(sid).put(PHOTO)
    log = store.event_log(sid)
    log.append([Event.user_message(seq, content=f"m{seq}") for seq in range(2, 6)])
    log.roll_over(3, archive=True)
    log.roll_over(5, archive=False)
    log.close()
    assert store.attachments(sid).read(sha) == PHOTO


@pytest.mark.parametrize("bad", ["", "a/b", ".hidden", "_quarantine"])
def test_a_session_id_that_could_escape_the_store_is_refused(
    store: SessionStorage, bad: str
) -> None:
    with pytest.raises(ValueError, match="invalid session id"):
        store.attachments(bad).put(PHOTO)


# --- a crash in the middle of a put --------------------------------------------------------


def test_a_put_a_crash_cut_short_is_never_visible_and_is_cleared_on_load(
    backend: Backend, store: SessionStorage
) -> None:
    sid = created(store)
    kept = store.attachments(sid).put(VOICE)
    backend.tear(store, sid, PHOTO)
    restarted = backend.open()
    blobs = restarted.attachments(sid)
    torn = content_hash(PHOTO)
    assert not blobs.has(torn)
    assert blobs.hashes() == [kept]
    with pytest.raises(AttachmentNotFoundError):
        blobs.read(torn)

    restarted.remove_stale_temp_files(sid)  # what loading the session does first

    assert backend.leftovers(restarted, sid) == []
    assert blobs.read(kept) == VOICE
    assert blobs.put(PHOTO) == torn  # put again (the download is repeated): whole
    assert blobs.read(torn) == PHOTO
