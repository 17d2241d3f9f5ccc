"""The test's side of the fake gateway: a unix socket every child of ``fake_gateway`` reports to.

::

    async with GatewayControl() as control:
        config = ExternalGatewayConfig(name="fake", **control.command(mode="relay"))
        ...  # start the gateway under test
        child = await control.child()            # the first child that said hello
        await child.emit(message("42", "hi", message_id="1", sender_id="42"))
        sent = await child.command("send_message")   # what duragent wrote to the child

Each child that starts connects and is a ``FakeChild`` (``children``, in start order): its
pid, the commands duragent wrote to it and the answers the child gave (``answers``: the
``message_id`` of each message sent), and ``emit`` / ``raw`` / ``refuse`` / ``hold`` /
``exit`` to act as the platform. Files duragent sent (``send_media``) read back decoded with
``sent_media`` (the bytes of a ``base64`` medium, the ``url`` of the other kind)::

    await child.refuse("rate_limited", "slow down", command="send_media")  # the next one
    sent = await child.command("send_media")
    (media,) = child.sent_media("42")
    assert (media.file_name, media.data, media.caption) == ("chart.png", png_bytes, "chart")
 ``closed`` is set when the child's connection ends (it
exited or was killed). The socket lives in a short temporary directory (unix socket paths
are limited to about 100 bytes).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from duragent.testing.fake_gateway import message

__all__ = ["FakeChild", "GatewayControl", "SentMedia", "message"]

WAIT_SECONDS = 15.0


@dataclass(frozen=True)
class SentMedia:
    """One ``send_media`` command, its medium decoded."""

    request_id: str
    chat_id: str
    source: str
    """``base64`` (the bytes are in ``data``) or ``url``."""
    mime_type: str | None
    file_name: str | None
    caption: str | None
    data: bytes | None = None
    url: str | None = None

    @classmethod
    def of(cls, command: dict[str, Any]) -> SentMedia:
        """Read a ``send_media`` command (``ValueError`` when its medium is not the protocol's)."""
        media = command.get("media")
        if not isinstance(media, dict) or media.get("source") not in ("base64", "url"):
            raise ValueError(f"not a protocol medium: {media!r}")
        data = None
        if media["source"] == "base64":
            try:
                data = base64.b64decode(str(media.get("data", "")), validate=True)
            except binascii.Error as exc:
                raise ValueError(f"media data is not base64: {exc}") from exc
        return cls(
            str(command.get("request_id", "")),
            str(command.get("chat_id", "")),
            str(media["source"]),
            media.get("mime_type"),
            media.get("filename"),
            command.get("caption"),
            data,
            media.get("url"),
        )


class FakeChild:
    """One started fake gateway process, as the test sees it."""

    def __init__(self, pid: int, mode: str, writer: asyncio.StreamWriter) -> None:
        self.pid = pid
        self.mode = mode
        self.started = time.monotonic()
        """When it said hello (``time.monotonic()``)."""
        self.commands: list[dict[str, Any]] = []
        self.arrived: list[float] = []
        """When each of ``commands`` reached the test (``time.monotonic()``)."""
        self.emitted: set[str] = set()
        """Message ids of events the child wrote to its stdout (they reach duragent even if
        the child dies next: the pipe keeps them)."""
        self.applied = 0
        """How many state-changing orders (``refuse``, ``hold``) the child has applied."""
        self.answers: dict[str, dict[str, Any]] = {}
        """``request_id`` → the ``command_ok`` / ``command_error`` the child answered."""
        self.closed = asyncio.Event()
        self._writer = writer
        self._changed = asyncio.Event()

    async def _order(self, order: dict[str, Any]) -> None:
        self._writer.write(json.dumps(order).encode() + b"\n")
        await self._writer.drain()

    async def emit(self, event: dict[str, Any]) -> None:
        """Make the child write ``event`` on its stdout."""
        await self._order({"emit": event})

    async def raw(self, data: str | bytes) -> None:
        """Make the child write ``data`` as it is (no newline added)."""
        if isinstance(data, bytes):
            await self._order({"raw_hex": data.hex()})
        else:
            await self._order({"raw": data})

    async def refuse(
        self, code: str, message: str, *, command: str | None = None, times: int = 1
    ) -> None:
        """Make the child answer the next command (of type ``command``) with ``command_error``.

        ``times``: that many commands, one after another. Protocol codes: ``chat_not_found``,
        ``message_not_found``, ``rate_limited``, ``unauthorized``, ``platform_error``,
        ``invalid_request``, ``not_connected``.
        """
        refusal = {"refuse": {"code": code, "message": message}, "only": command, "times": times}
        await self._applied(refusal)

    async def hold(self) -> None:
        """Make the child stop answering commands (they are still passed to the test)."""
        await self._applied({"hold": True})

    async def _applied(self, order: dict[str, Any], *, within: float = WAIT_SECONDS) -> None:
        """Give ``order`` and return once the child has applied it.

        Orders and duragent's commands reach the child on two channels (its control socket,
        its stdin): without the wait, a command written right after could be read first.
        """
        wanted = self.applied + 1
        await self._order(order)
        async with asyncio.timeout(within):
            while self.applied < wanted:
                self._changed.clear()
                await self._changed.wait()

    async def exit(self, code: int) -> None:
        """Make the child exit with ``code``."""
        with contextlib.suppress(ConnectionError):
            await self._order({"exit": code})

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        """The commands of one type duragent wrote to this child, in order."""
        return [c for c in self.commands if c.get("type") == kind]

    def sent_media(self, chat_id: str | None = None) -> list[SentMedia]:
        """The ``send_media`` commands (for one chat), decoded, in order (refused ones too)."""
        return [
            SentMedia.of(c)
            for c in self.of_type("send_media")
            if chat_id is None or c.get("chat_id") == chat_id
        ]

    async def command(
        self,
        kind: str,
        where: Callable[[dict[str, Any]], bool] = lambda _c: True,
        *,
        within: float = WAIT_SECONDS,
    ) -> dict[str, Any]:
        """The first command of type ``kind`` matching ``where`` (waiting for it)."""
        async with asyncio.timeout(within):
            while True:
                for found in self.of_type(kind):
                    if where(found):
                        return found
                self._changed.clear()
                await self._changed.wait()

    async def answer(self, request_id: str, *, within: float = WAIT_SECONDS) -> dict[str, Any]:
        """The child's answer to command ``request_id`` (waiting for it)."""
        async with asyncio.timeout(within):
            while request_id not in self.answers:
                self._changed.clear()
                await self._changed.wait()
        return self.answers[request_id]

    def _received(self, command: dict[str, Any]) -> None:
        self.commands.append(command)
        self.arrived.append(time.monotonic())
        self._changed.set()


class GatewayControl:
    """Listens for fake gateway children (see module docstring)."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="fgw"))
        self.path = self._dir / "control.sock"
        self.children: list[FakeChild] = []
        self.on_command: Callable[[FakeChild, dict[str, Any]], None] | None = None
        """Called with each command as it arrives (a benchmark's clock), if set."""
        self._server: asyncio.Server | None = None
        self._arrived = asyncio.Event()
        self._handlers: set[asyncio.Task[None]] = set()

    def command(self, *options: str, mode: str = "relay") -> dict[str, Any]:
        """``command`` and ``args`` for ``ExternalGatewayConfig`` running the fake."""
        args = ["-m", "duragent.testing.fake_gateway", "--control", str(self.path)]
        return {"command": sys.executable, "args": [*args, "--mode", mode, *options]}

    async def __aenter__(self) -> GatewayControl:
        self._server = await asyncio.start_unix_server(
            self._accept, path=str(self.path), limit=16 * 1024 * 1024
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
        for child in self.children:
            with contextlib.suppress(Exception):
                child._writer.close()
        for task in list(self._handlers):
            task.cancel()
        shutil.rmtree(self._dir, ignore_errors=True)

    async def child(self, index: int = 0, *, within: float = WAIT_SECONDS) -> FakeChild:
        """The ``index``-th child to start (waiting for it to say hello)."""
        async with asyncio.timeout(within):
            while len(self.children) <= index:
                self._arrived.clear()
                await self._arrived.wait()
        return self.children[index]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        child: FakeChild | None = None
        try:
            async for raw in reader:
                report = json.loads(raw)
                if "hello" in report:
                    child = FakeChild(int(report["hello"]), str(report["mode"]), writer)
                    self.children.append(child)
                    self._arrived.set()
                elif "command" in report and child is not None:
                    child._received(report["command"])
                    if self.on_command is not None:
                        self.on_command(child, report["command"])
                elif "emitted" in report and child is not None:
                    child.emitted.add(str(report["emitted"]))
                elif "applied" in report and child is not None:
                    child.applied += 1
                    child._changed.set()
                elif "answered" in report and child is not None:
                    answer = report["answered"]
                    child.answers[str(answer.get("request_id"))] = answer
                    child._changed.set()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if child is not None:
                child.closed.set()
            self._handlers.discard(task)
