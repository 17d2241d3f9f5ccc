"""A small synchronous client for the duragent HTTP API, used by chat, attach and session.

Server-sent events are parsed here, by the rules of the HTML standard, rather than with
``httpx-sse`` (see specs/202611240220.first-contact-cli.md): an event ends at a blank line,
several ``data:`` lines are joined with newlines, one space after the colon is dropped and
comment lines (``:``) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["ApiClient", "ApiError", "SseEvent", "parse_sse"]


class ApiError(Exception):
    """The server answered with an error (its problem+json detail is the message)."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        super().__init__(f"{status}: {detail}")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its name and decoded JSON data."""

    name: str
    data: dict[str, Any]


def _event(name: str, data_lines: list[str]) -> SseEvent:
    raw = "\n".join(data_lines)
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        data = {"raw": raw}
    return SseEvent(name or "message", data if isinstance(data, dict) else {"value": data})


def parse_sse(lines: Iterable[str]) -> Iterator[SseEvent]:
    """The events of a ``text/event-stream`` given line by line (line ends removed).

    An event without data is not dispatched (as in browsers); a last event that the stream
    cut before its blank line is still delivered, since our server always ends with
    ``done`` or ``error`` and a half-closed stream should show what it got.
    """
    name, data_lines = "", list[str]()
    for line in lines:
        if not line:
            if data_lines:
                yield _event(name, data_lines)
            name, data_lines = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data_lines.append(value)
        # id: and retry: are for reconnecting clients; the CLI does not reconnect.
    if data_lines:
        yield _event(name, data_lines)


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        detail = str(response.json().get("detail") or response.text)
    except ValueError:
        detail = response.text
    raise ApiError(response.status_code, detail)


class ApiClient:
    """Calls one server; every method raises ApiError or httpx.HTTPError on failure."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 600) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def close(self) -> None:
        """Close connections."""
        self._http.close()

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        _raise_for(response)
        return response.json() if response.content else None

    def readyz(self) -> dict[str, Any]:
        """The readiness document (status, workspace_hash)."""
        result: dict[str, Any] = self._json("GET", "/readyz")
        return result

    def version(self) -> dict[str, Any]:
        """The server's ``/version`` document."""
        result: dict[str, Any] = self._json("GET", "/version")
        return result

    def agents(self) -> list[dict[str, Any]]:
        """The agents the server has loaded."""
        result: list[dict[str, Any]] = self._json("GET", "/api/v1/agents")["agents"]
        return result

    def shutdown(self) -> dict[str, Any]:
        """Ask the server to stop gracefully (admin route: needs the admin token, if any)."""
        result: dict[str, Any] = self._json("POST", "/api/admin/v1/shutdown")
        return result

    def reload_agents(self) -> dict[str, Any]:
        """Make the server re-read its agents folder (admin route)."""
        result: dict[str, Any] = self._json("POST", "/api/admin/v1/reload-agents")
        return result

    def end_session(self, session_id: str) -> dict[str, Any]:
        """End a session: completed, its files kept, no further turns."""
        result: dict[str, Any] = self._json("POST", f"/api/v1/sessions/{session_id}/end")
        return result

    def create_session(self, agent: str) -> dict[str, Any]:
        """A new session for ``agent``."""
        result: dict[str, Any] = self._json("POST", "/api/v1/sessions", json={"agent": agent})
        return result

    def sessions(self) -> list[dict[str, Any]]:
        """Sessions, newest first."""
        result: list[dict[str, Any]] = self._json("GET", "/api/v1/sessions")["sessions"]
        return result

    def session(self, session_id: str) -> dict[str, Any]:
        """One session's summary."""
        result: dict[str, Any] = self._json("GET", f"/api/v1/sessions/{session_id}")
        return result

    def schedules(self) -> list[dict[str, Any]]:
        """Every schedule with its run state, by id."""
        result: list[dict[str, Any]] = self._json("GET", "/api/v1/schedules")["schedules"]
        return result

    def schedule(self, schedule_id: str) -> dict[str, Any]:
        """One schedule, its run state and its recent runs."""
        result: dict[str, Any] = self._json("GET", f"/api/v1/schedules/{schedule_id}")
        return result

    def cancel_schedule(self, schedule_id: str) -> dict[str, Any]:
        """Cancel a schedule."""
        result: dict[str, Any] = self._json("DELETE", f"/api/v1/schedules/{schedule_id}")
        return result

    def run_schedule(self, schedule_id: str) -> None:
        """Start a run of the schedule now."""
        self._json("POST", f"/api/v1/schedules/{schedule_id}/run")

    def delete_session(self, session_id: str) -> None:
        """Delete a session."""
        self._json("DELETE", f"/api/v1/sessions/{session_id}")

    def messages(
        self, session_id: str, limit: int = 100, include_tools: bool = False
    ) -> list[dict[str, Any]]:
        """The last ``limit`` messages (or the server's maximum, if lower)."""
        return self.history(session_id, limit, include_tools)[0]

    def history(
        self, session_id: str, limit: int = 100, include_tools: bool = False
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The last ``limit`` messages, and the server's maximum if it answered fewer for it."""
        params = {"limit": limit, "include_tools": str(include_tools).lower()}
        body = self._json("GET", f"/api/v1/sessions/{session_id}/messages", params=params)
        messages: list[dict[str, Any]] = body["messages"]
        clamped = body.get("limit_clamped_to")
        return messages, clamped if isinstance(clamped, int) else None

    def approve(self, session_id: str, call_id: str, decision: str) -> dict[str, Any]:
        """Decide on a pending tool call."""
        result: dict[str, Any] = self._json(
            "POST",
            f"/api/v1/sessions/{session_id}/approve",
            json={"call_id": call_id, "decision": decision},
        )
        return result

    def stream(self, session_id: str, content: str) -> Iterator[SseEvent]:
        """Send a message and yield the reply's events as they arrive."""
        with self._http.stream(
            "POST", f"/api/v1/sessions/{session_id}/stream", json={"content": content}
        ) as response:
            if response.status_code >= 400:
                response.read()
                _raise_for(response)
            yield from parse_sse(response.iter_lines())
