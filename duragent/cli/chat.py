"""The interactive chat: ``duragent chat --agent NAME`` and ``duragent attach [ID]``.

Streams the reply as it is written, shows tool calls and results, asks for approvals
(``[y]`` once, ``[a]`` always, ``[n]`` deny; any other answer asks again, so a stray line
such as ``/status`` never decides a tool call), and understands ``/reset`` (end the session,
as the reference's chat gateways do, and start a new one), ``/status``, ``/help`` and
``/exit`` (also ``/quit``, Ctrl-D; Ctrl-C at the prompt
exits with status 130, during a reply it stops waiting for it). Works on a terminal (with
line editing and history, and a "thinking" line while the model is called) and with piped
input.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from duragent.cli.client import ApiClient, ApiError, SseEvent

__all__ = ["HELP", "ChatSession", "line_reader"]

HELP = "commands: /reset (end this session, start a new one), /status, /help, /exit"
_DECISIONS = {"y": "allow_once", "a": "allow_always", "n": "deny"}


def line_reader(interactive: bool | None = None) -> Callable[[str], str]:
    """``input``, with line editing and history (GNU readline) when stdin is a terminal.

    Importing :mod:`readline` is what gives ``input()`` arrow keys and history; without
    it, arrow keys end up in the message as escape codes. Pipes read plain lines.
    """
    if interactive is None:
        interactive = sys.stdin.isatty()
    if interactive:
        with contextlib.suppress(ImportError):  # Python built without readline
            import readline  # noqa: F401  (imported for its effect on input())
    return input


class ChatSession:
    """One chat conversation against a server."""

    def __init__(
        self,
        client: ApiClient,
        agent: str,
        session_id: str,
        *,
        console: Console | None = None,
        read: Callable[[str], str] = input,
    ) -> None:
        self.client = client
        self.agent = agent
        self.session_id = session_id
        self.console = console or Console(highlight=False)
        self._read = read

    def show_history(self, limit: int = 4) -> None:
        """Print the last few messages (used by attach)."""
        for m in self.client.messages(self.session_id, limit=limit):
            who = "you" if m["role"] == "user" else self.agent
            self.console.print(f"[bold]{who}>[/bold] {escape(str(m.get('content', '')))}")

    def run(self) -> None:
        """Read lines until /exit or end of input."""
        self.console.print(f"[dim]session {self.session_id} with {self.agent} — {HELP}[/dim]")
        while True:
            try:
                line = self._read("you> ")
            except EOFError:
                self.console.print()
                return
            except KeyboardInterrupt:
                self.console.print()
                raise
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                return
            if text == "/help":
                self.console.print(HELP)
            elif text == "/status":
                self._status()
            elif text == "/reset":
                self.reset()
            else:
                self.send(text)

    def reset(self) -> None:
        """End the current session (completed: kept on disk, no more turns), start another."""
        old = self.session_id
        try:
            self.client.end_session(old)
            ended = f"ended session {old}; "
        except ApiError as exc:  # still start afresh: that is what was asked
            self.console.print(f"[red]could not end session {old}: {escape(str(exc))}[/red]")
            ended = ""
        self.session_id = self.client.create_session(self.agent)["session_id"]
        self.console.print(f"[dim]{ended}new session {self.session_id}[/dim]")

    def _status(self) -> None:
        info = self.client.session(self.session_id)
        self.console.print(
            f"Session: {info['session_id']}\nAgent: {info['agent']}\n"
            f"Status: {info['status']}\nCreated: {info['created_at']}"
        )

    def send(self, text: str) -> None:
        """Send one message and render the streamed reply (and any approval round)."""
        try:
            pending = self._render(self.client.stream(self.session_id, text))
            while pending is not None:
                call_id, command = pending
                decision = self._decide(command)
                result = self.client.approve(self.session_id, call_id, decision)
                if result.get("status") == "pending_approval":
                    pending = (str(result["call_id"]), str(result["command"]))
                    continue
                self.console.print(
                    f"[bold]{self.agent}>[/bold] {escape(str(result.get('content', '')))}"
                )
                pending = None
        except ApiError as exc:
            self.console.print(f"[red]error: {escape(str(exc))}[/red]")
        except (EOFError, KeyboardInterrupt):
            self.console.print()

    def _decide(self, command: str) -> str:
        """Ask until the answer is y, a or n (EOF or Ctrl-C leave the call pending)."""
        prompt = f"approve `{command}`? [y] once / [a] always / [n] deny: "
        while True:
            answer = self._read(prompt).strip().lower()
            decision = _DECISIONS.get(answer)
            if decision is None and answer in ("yes", "always", "no"):
                decision = _DECISIONS[answer[0]]
            if decision is not None:
                return decision
            self.console.print(f"please answer y, a or n (got {escape(answer)!r})")

    def _waiting(self, events: Iterable[SseEvent]) -> Iterator[SseEvent]:
        """``events``, with a "thinking" line on a terminal while none has arrived yet.

        The model may take seconds (or retry a failed call) before the first token or after
        a tool result; a blank prompt looks hung.
        """
        if not self.console.is_terminal:
            yield from events
            return
        status: Status | None = self.console.status(f"{self.agent} is thinking…")
        iterator = iter(events)
        try:
            while True:
                if status is not None:
                    status.start()
                try:
                    event = next(iterator)
                except StopIteration:
                    return
                finally:
                    if status is not None:
                        status.stop()
                # wait again only where the model is called next: after a tool's result
                status = (
                    self.console.status(f"{self.agent} is thinking…")
                    if event.name == "tool_result"
                    else None
                )
                yield event
        finally:
            if status is not None:
                status.stop()

    def _render(self, events: Iterable[SseEvent]) -> tuple[str, str] | None:
        pending: tuple[str, str] | None = None
        started = False
        for event in self._waiting(events):
            name, data = event.name, event.data
            if name == "token":
                if not started:
                    self.console.print(f"[bold]{self.agent}>[/bold] ", end="")
                    started = True
                self.console.print(escape(str(data.get("content", ""))), end="")
            elif name == "tool_call":
                if started:
                    self.console.print()
                    started = False
                self.console.print(
                    f"[dim]→ {data.get('name')} {escape(str(data.get('arguments')))}[/dim]"
                )
            elif name == "tool_result":
                content = str(data.get("content", ""))
                short = content if len(content) <= 300 else content[:300] + "…"
                mark = "✓" if data.get("success") else "✗"
                self.console.print(f"[dim]{mark} {escape(short)}[/dim]")
            elif name == "approval_required":
                pending = (str(data.get("call_id")), str(data.get("command")))
            elif name == "error":
                self.console.print(f"\n[red]error: {escape(str(data.get('message')))}[/red]")
            elif name == "cancelled":  # the server stopped the turn (e.g. it is shutting down)
                self.console.print("\n[yellow][cancelled][/yellow]")
                started = False
            elif name == "done" and started:
                self.console.print()
        return pending
