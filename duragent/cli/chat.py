"""The interactive chat: ``duragent chat --agent NAME`` and ``duragent attach [ID]``.

Streams the reply as it is written, shows tool calls and results, asks for approvals
(``[y]`` once, ``[a]`` always, ``[n]`` deny — anything else denies), and understands
``/reset`` (start a new session), ``/status``, ``/help`` and ``/exit`` (also ``/quit``,
Ctrl-D). Works on a terminal and with piped input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.console import Console
from rich.markup import escape

from duragent.cli.client import ApiClient, ApiError, SseEvent

__all__ = ["HELP", "ChatSession"]

HELP = "commands: /reset (new session), /status, /help, /exit"
_DECISIONS = {"y": "allow_once", "a": "allow_always", "n": "deny"}


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
            except (EOFError, KeyboardInterrupt):
                self.console.print()
                return
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
                self.session_id = self.client.create_session(self.agent)["session_id"]
                self.console.print(f"[dim]new session {self.session_id}[/dim]")
            else:
                self.send(text)

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
                answer = (
                    self._read(f"approve `{command}`? [y] once / [a] always / [n] deny: ")
                    .strip()
                    .lower()
                )
                decision = _DECISIONS.get(answer[:1], "deny")
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

    def _render(self, events: Iterable[SseEvent]) -> tuple[str, str] | None:
        pending: tuple[str, str] | None = None
        started = False
        for event in events:
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
            elif name == "done" and started:
                self.console.print()
        return pending
