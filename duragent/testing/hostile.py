"""A hostile scripted model: answers a prompt-injected or broken model could send, and probes.

A model's output is untrusted input (it may have read anything), so the runtime must survive
whatever it streams. Each function here returns script items for ``ScriptedLLMServer``; the
huge ones are generated while sending (``Reply.filler_bytes``, ``ToolCallReply.filler_bytes``,
``Reply.endless``), so the fake stays small however big the attack::

    llm.enqueue(*hostile.huge_argument(40 << 20), Reply(text="done"))

``LivenessProbe`` polls a server's ``/livez`` from a thread and keeps the slowest answer;
``peak_rss_bytes`` reads a process's high-water mark, so a test can say how the server fared.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType

import httpx

from duragent.testing.script import Reply, ScriptItem, ToolCallReply

__all__ = [
    "LivenessProbe",
    "endless_reply",
    "huge_argument",
    "huge_reply",
    "invalid_unicode_call",
    "many_calls",
    "nested_arguments",
    "peak_rss_bytes",
]


def huge_reply(size: int) -> list[ScriptItem]:
    """A text answer of ``size`` bytes."""
    return [Reply(text="Here it is: ", filler_bytes=size)]


def endless_reply() -> list[ScriptItem]:
    """A text answer that never ends (until the client stops reading)."""
    return [Reply(text="Listen: ", endless=True)]


def huge_argument(size: int, tool: str = "bash") -> list[ScriptItem]:
    """One ``tool`` call whose ``command`` argument is ``size`` bytes."""
    call = ToolCallReply(name=tool, arguments='{"command":"echo "}', filler_bytes=size)
    return [Reply(tool_calls=[call])]


def nested_arguments(depth: int, tool: str = "bash") -> list[ScriptItem]:
    """One call whose arguments nest ``depth`` lists deep (JSON parsers recurse on them)."""
    args = '{"command":"echo hi","x":' + "[" * depth + "]" * depth + "}"
    return [
        Reply(tool_calls=[ToolCallReply(name=tool, arguments=args)], argument_fragment_size=4096)
    ]


def many_calls(count: int, tool: str = "bash", command: str = "true") -> list[ScriptItem]:
    """One response with ``count`` calls of ``tool`` (distinct, so no doom-loop check fires)."""
    calls = [
        ToolCallReply(name=tool, arguments={"command": f"{command} # {i}"}, id=f"many_{i}")
        for i in range(count)
    ]
    return [Reply(tool_calls=calls, argument_fragment_size=4096)]


def invalid_unicode_call(tool: str = "bash") -> list[ScriptItem]:
    """A call with lone surrogates, and one in the text.

    In the arguments both as a JSON escape and as a raw code point (the SSE frame escapes it).
    """
    args = '{"command":"echo \\ud800 \udfff end"}'
    return [Reply(text="Running \ud800 it", tool_calls=[ToolCallReply(name=tool, arguments=args)])]


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident memory (``VmHWM``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no VmHWM for process {pid}")


class LivenessProbe:
    """Polls ``<url>/livez`` every ``interval`` seconds in a thread; ``worst`` is the slowest.

    A request that fails or times out counts as ``timeout`` seconds (the probe's own limit).
    """

    def __init__(self, url: str, *, interval: float = 0.1, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/") + "/livez"
        self.interval = interval
        self.timeout = timeout
        self.worst = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="livez-probe", daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=self.timeout) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    ok = client.get(self.url).status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.monotonic() - started if ok else self.timeout
                self.worst = max(self.worst, took)
                self.samples += 1
                self._stop.wait(self.interval)

    def __enter__(self) -> LivenessProbe:
        """Start polling; returns once the first answer came (the probe is known to work)."""
        self._thread.start()
        deadline = time.monotonic() + self.timeout
        while not self.samples and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 1)
