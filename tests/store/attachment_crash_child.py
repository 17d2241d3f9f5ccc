"""The child program of the attachment crash tests: it puts blobs until it is SIGKILLed.

Run as a program (it imports only ``duragent`` and the standard library):

- ``torn FOLDER SIZE``: put one blob of SIZE random bytes into the session folder FOLDER,
  through file calls whose first write stops halfway; it prints ``TORN <sha256>`` there and
  waits for its SIGKILL (the kill lands inside the put, every time).
- ``files FOLDER SEED``: put blobs of 1–4 MB into FOLDER one after another, printing
  ``PUT <sha256>`` after each put returned, until it is killed.
- ``postgres DSN SCHEMA SESSION SEED``: the same into a session of a PostgreSQL store.

Each ``PUT`` line is an acknowledgement: that blob must be there, whole, after the kill.
The parent's side is ``Child``.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from duragent.core.attachments import content_hash
from duragent.store.attachment_blobs import AttachmentFiles
from duragent.store.fileops import OsFileOps
from duragent.store.protocols import AttachmentStorage

CHILD_PATH = Path(__file__).resolve()


class HalfWriteOps(OsFileOps):
    """The real OS calls, except that the first write stops halfway and the process waits
    for its SIGKILL: what a kill arriving during a large ``write`` does."""

    def __init__(self, sha: str) -> None:
        self.sha = sha

    def write(self, fd: int, data: bytes) -> int:
        os.write(fd, data[: len(data) // 2])
        print(f"TORN {self.sha}", flush=True)
        while True:
            signal.pause()


class ChunkedOps(OsFileOps):
    """The real OS calls, but a write takes at most 64 KB, as POSIX allows: a large blob is
    many writes, so a kill lands inside one more often than between two puts."""

    def write(self, fd: int, data: bytes) -> int:
        return os.write(fd, data[: 64 << 10])


def put_forever(blobs: AttachmentStorage, seed: int) -> None:
    """Put blobs of 1–4 MB, printing each one's hash once its put returned.

    The next blob is made before the line for the last one is printed, so a kill that
    follows a line lands in the next put, not in making its bytes.
    """
    rng = random.Random(seed)
    data = rng.randbytes(rng.randint(1 << 20, 4 << 20))
    while True:
        sha = blobs.put(data)
        data = rng.randbytes(rng.randint(1 << 20, 4 << 20))
        print(f"PUT {sha}", flush=True)


class Child:
    """One child running this program; SIGKILLed and reaped on leaving the ``with`` block."""

    def __init__(self, *args: str) -> None:
        self.cmd = [sys.executable, str(CHILD_PATH), *args]
        self.proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def __enter__(self) -> Child:
        self.proc = subprocess.Popen(
            self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def line(self, prefix: str, timeout: float = 60.0) -> str:
        """The next line of its output starting with ``prefix`` (AssertionError if none)."""
        assert self.proc is not None
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buffer:
                found, self._buffer = self._buffer.split(b"\n", 1)
                if found.startswith(prefix.encode()):
                    return found.decode()
            left = deadline - time.monotonic()
            assert left > 0, f"the child printed no {prefix!r} in {timeout} s"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    error = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise AssertionError(f"the child ended before {prefix!r}:\n{error}")
                self._buffer += chunk

    def kill(self) -> None:
        """SIGKILL it (if it still runs) and reap it."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        self.proc = None


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "torn":
        data = os.urandom(int(argv[2]))
        AttachmentFiles(Path(argv[1]), HalfWriteOps(content_hash(data))).put(data)
    elif mode == "files":
        put_forever(AttachmentFiles(Path(argv[1]), ChunkedOps()), int(argv[2]))
    elif mode == "postgres":
        from duragent.store.postgres import Database, PostgresSessionStore

        store = PostgresSessionStore(Database(argv[1], schema=argv[2]), node_id="crash-child")
        store.open()
        put_forever(store.attachments(argv[3]), int(argv[4]))
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
