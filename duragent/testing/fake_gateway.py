"""A fake gateway plugin: a real child process speaking protocol ``v1alpha1``, steered by a test.

Run as ``python -m duragent.testing.fake_gateway --control <unix socket> [--mode …]``, as
``gateways.external[].command`` would run a real gateway. It is a relay between duragent and
the test (``GatewayControl`` in ``gateway_control``, listening on the socket):

- first it connects to the control socket and says ``{"hello": <pid>, "mode": …}``;
- every command duragent writes on its stdin is passed to the test as ``{"command": {…}}``
  and, unless ``--no-ack``, answered at once as a platform would: ``command_ok`` (with a
  ``message_id`` ``g1``, ``g2``… for ``send_message`` / ``send_media``), ``pong`` for ``ping``;
  ``shutdown`` is answered with a ``shutdown`` event and exit 0;
- what the test sends is done: ``{"emit": {…}}`` writes the event (and reports
  ``{"emitted": <message_id>}`` once it is in the pipe), ``{"raw": "…"}`` writes
  the text as it is (``raw_hex`` for bytes that are not UTF-8), ``{"refuse": {"code", "message"}}``
  answers the next command with ``command_error`` (with ``"only": "<type>"`` the next of that
  type, with ``"times": n`` that many), ``{"hold": true}`` stops answering commands (a
  platform that hangs), ``{"exit": n}`` exits with ``n``; ``refuse`` and ``hold`` are
  reported as ``{"applied": …}`` once in effect (the test waits for it: its orders and
  duragent's commands arrive on two channels);
- each answer it writes is reported as ``{"answered": {…}}`` (the ``message_id`` given);
- a ``send_media`` whose ``media`` is not the protocol's (``source`` ``url`` with a ``url``,
  or ``base64`` with ``data`` and ``mime_type``) is answered ``command_error``
  ``invalid_request``, as a gateway that cannot read it would;
- end of file on stdin (duragent died) ends it with 0, the contract every gateway keeps,
  unless ``--ignore-stdin-eof`` (to prove the parent-death signal alone is enough);
  ``--ignore-shutdown`` ignores both (a gateway that must be killed).

Modes, for the supervision tests: ``relay`` (the above), ``crash`` (hello, ``ready`` if
``--ready``, then exit ``--exit-code`` at once), ``flood`` (``--count`` events as fast as the
pipe takes them: ``message_received`` spread over ``--chats`` chats, or ``pong`` noise with
``--noise``, then relay) and ``garbage`` (every kind of bad line, then one good message with
the text ``after the garbage``, then relay). Standard library only, so it starts in tens of
milliseconds.

Media: ``media_message`` builds a ``message_received`` whose ``content`` is ``media`` with a
``url``, as the reference's protocol carries a photo, voice note or document; the bytes are
served from the test's process by ``MediaFileServer`` (``_gateway_files``: download counts,
scripted failures and expired links; imported from here on first use, so the child itself
stays on the standard library)::

    async with MediaFileServer() as files:
        url = files.add(ogg_bytes, "voice.oga", "audio/ogg")
        await child.emit(media_message("42", url, media_type="voice", message_id="v1",
                                       sender_id="42"))
        ...
        assert files.downloads(url) == 1
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from duragent.testing._gateway_files import MediaFileServer

__all__ = ["MediaFileServer", "main", "media_message", "message"]


class _Child:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: BinaryIO = sys.stdout.buffer
        self.lock = threading.Lock()
        self.control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control.connect(args.control)
        self.sent = 0
        self.refusals: list[dict[str, Any]] = []
        self.holding = False
        self.started = time.monotonic()

    # --- writing ------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        with self.lock:
            self.out.write(data)
            self.out.flush()

    def emit(self, event: dict[str, Any]) -> None:
        self.write(json.dumps(event).encode() + b"\n")

    def tell(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.control.sendall(json.dumps(message).encode() + b"\n")

    def exit(self, code: int) -> None:
        with self.lock:
            self.out.flush()
        os._exit(code)

    # --- the modes ----------------------------------------------------------------------

    def ready(self) -> None:
        capabilities = [c for c in self.args.capabilities.split(",") if c]
        ready = {
            "type": "ready",
            "gateway": "fake",
            "version": self.args.version,
            "capabilities": capabilities,
        }
        if self.args.bot_username:
            ready["bot_username"] = self.args.bot_username
        self.emit(ready)

    def run(self) -> None:
        self.tell({"hello": os.getpid(), "mode": self.args.mode})
        mode = self.args.mode
        if mode == "crash":
            if self.args.ready:
                self.ready()
            self.exit(self.args.exit_code)
        if not self.args.no_ready:
            self.ready()
        if mode == "flood":
            self.flood()
        elif mode == "garbage":
            self.garbage()
        threading.Thread(target=self.from_control, daemon=True).start()
        self.from_stdin()

    def flood(self) -> None:
        for i in range(self.args.count):
            if self.args.noise:
                self.emit(
                    {"type": "pong", "request_id": f"n{i}", "uptime_seconds": 1, "connected": True}
                )
                continue
            chat = str(5000 + i % self.args.chats)
            self.emit(message(chat, f"flood {i}", message_id=f"f{i}", sender_id=chat))

    def garbage(self) -> None:
        bad: list[bytes] = [
            b"this is not json",
            b"[1, 2, 3]",
            b'{"no_type": true}',
            b'{"type": "message_received", "chat_id": "1"}',
            b'{"type": "a_future_event", "data": 1}',
            b"x" * (1024 * 1024 + 10),
            b"\xff\xfe not utf-8 \xc3",
            b"",
            b"   ",
        ]
        for line in bad:
            self.write(line + b"\n")
        good = message("7001", "after the garbage", message_id="g-after", sender_id="7001")
        self.write(json.dumps(good).encode() + b"\r\n")

    # --- the relay ----------------------------------------------------------------------

    def from_stdin(self) -> None:
        for raw in sys.stdin.buffer:
            try:
                command = json.loads(raw)
            except ValueError:
                continue
            self.tell({"command": command})
            self.answer(command)
        if self.args.ignore_stdin_eof or self.args.ignore_shutdown:
            while True:
                time.sleep(3600)
        self.exit(0)

    def answer(self, command: dict[str, Any]) -> None:
        kind = command.get("type")
        if kind == "shutdown" and not self.args.ignore_shutdown:
            self.emit({"type": "shutdown", "reason": "asked to"})
            self.exit(0)
        request_id = command.get("request_id")
        if request_id is None or self.args.no_ack or self.holding:
            return
        refusal = self.refusal_for(str(kind))
        if refusal is None and kind == "send_media":
            problem = media_problem(command.get("media"))
            if problem is not None:
                refusal = {"code": "invalid_request", "message": problem}
        if refusal is not None:
            self.answered({"type": "command_error", "request_id": request_id, **refusal})
            return
        if kind == "ping":
            uptime = int(time.monotonic() - self.started)
            self.emit(
                {
                    "type": "pong",
                    "request_id": request_id,
                    "uptime_seconds": uptime,
                    "connected": True,
                }
            )
            return
        ok: dict[str, Any] = {"type": "command_ok", "request_id": request_id}
        if kind in ("send_message", "send_media"):
            self.sent += 1
            ok["message_id"] = f"g{self.sent}"
        self.answered(ok)

    def answered(self, event: dict[str, Any]) -> None:
        self.emit(event)
        self.tell({"answered": event})

    def refusal_for(self, kind: str) -> dict[str, Any] | None:
        """The first scripted refusal for a command of ``kind``, used up by one."""
        for refusal in self.refusals:
            if refusal["only"] in (None, kind):
                refusal["times"] -= 1
                if refusal["times"] <= 0:
                    self.refusals.remove(refusal)
                return {"code": refusal["code"], "message": refusal["message"]}
        return None

    def from_control(self) -> None:
        with self.control.makefile("rb") as lines:
            for raw in lines:
                order = json.loads(raw)
                if "emit" in order:
                    event = order["emit"]
                    self.emit(event)
                    self.tell({"emitted": event.get("message_id")})
                elif "raw" in order:
                    self.write(str(order["raw"]).encode())
                elif "raw_hex" in order:
                    self.write(bytes.fromhex(order["raw_hex"]))
                elif "hold" in order:
                    self.holding = bool(order["hold"])
                    self.tell({"applied": "hold"})
                elif "refuse" in order:
                    refusal = {**order["refuse"], "only": order.get("only")}
                    self.refusals.append({**refusal, "times": int(order.get("times", 1))})
                    self.tell({"applied": "refuse"})
                elif "exit" in order:
                    self.exit(int(order["exit"]))
        self.exit(3)  # the test went away: do not outlive it


def media_problem(media: Any) -> str | None:
    """What is wrong with a ``send_media`` command's ``media``, or ``None``."""
    if not isinstance(media, dict):
        return "media must be an object tagged by 'source'"
    source = media.get("source")
    if source == "url":
        return None if isinstance(media.get("url"), str) else "a url media needs 'url'"
    if source != "base64":
        return f"unknown media source {source!r} (url or base64)"
    if not isinstance(media.get("data"), str) or not isinstance(media.get("mime_type"), str):
        return "a base64 media needs 'data' and 'mime_type'"
    try:
        base64.b64decode(media["data"], validate=True)
    except ValueError:
        return "media 'data' is not base64"
    return None


def message(
    chat_id: str,
    text: str,
    *,
    message_id: str,
    sender_id: str,
    chat_type: str = "dm",
    **extra: Any,
) -> dict[str, Any]:
    """A ``message_received`` event with text content, as a gateway writes it."""
    return {
        "type": "message_received",
        "message_id": message_id,
        "chat_id": chat_id,
        "sender": {"id": sender_id},
        "content": {"type": "text", "text": text},
        "routing": {
            "channel": "fake",
            "chat_type": chat_type,
            "chat_id": chat_id,
            "sender_id": sender_id,
        },
        **extra,
    }


def media_message(
    chat_id: str,
    url: str,
    *,
    message_id: str,
    sender_id: str,
    media_type: str = "image",
    caption: str | None = None,
    mime_type: str | None = None,
    file_name: str | None = None,
    size: int | None = None,
    chat_type: str = "dm",
    **extra: Any,
) -> dict[str, Any]:
    """A ``message_received`` event with ``media`` content at ``url``, as a gateway writes it.

    ``media_type`` is the reference's (``image``, ``voice``, ``audio``, ``video``,
    ``document``…); ``caption`` is the text sent with it. ``mime_type``, ``file_name`` and
    ``size`` are not in the reference's protocol (its parser ignores them): given, they are
    added to ``content`` for a gateway that says more.
    """
    event = message(
        chat_id, "", message_id=message_id, sender_id=sender_id, chat_type=chat_type, **extra
    )
    content: dict[str, Any] = {"type": "media", "media_type": media_type, "url": url}
    more = {"caption": caption, "mime_type": mime_type, "file_name": file_name, "size": size}
    content.update({k: v for k, v in more.items() if v is not None})
    event["content"] = content
    return event


def __getattr__(name: str) -> Any:
    """``MediaFileServer`` on first use (aiohttp would slow the child's start)."""
    if name == "MediaFileServer":
        from duragent.testing._gateway_files import MediaFileServer

        return MediaFileServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Parse the options and run the fake (see module docstring)."""
    parser = argparse.ArgumentParser(prog="fake_gateway")
    parser.add_argument("--control", required=True)
    parser.add_argument("--mode", choices=("relay", "crash", "flood", "garbage"), default="relay")
    parser.add_argument("--exit-code", type=int, default=1)
    parser.add_argument("--ready", action="store_true", help="crash mode: say ready first")
    parser.add_argument("--no-ready", action="store_true")
    parser.add_argument("--no-ack", action="store_true")
    parser.add_argument("--ignore-stdin-eof", action="store_true")
    parser.add_argument("--ignore-shutdown", action="store_true", help="and stdin's end")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--chats", type=int, default=10)
    parser.add_argument("--noise", action="store_true")
    parser.add_argument("--version", default="v1alpha1")
    parser.add_argument("--bot-username", default=None)
    parser.add_argument("--capabilities", default="media,edit,delete,typing,reply,inline_keyboard")
    _Child(parser.parse_args(argv)).run()


if __name__ == "__main__":
    main()
