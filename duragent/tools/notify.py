"""Policy notifications: after a tool call ran, tell the log or a webhook (``notify:``).

When the merged policy has ``notify.enabled`` and the call matches ``notify.patterns`` (or
there are none), each delivery gets ``{event: "command_notification", session_id, agent,
command, success}``: ``log`` writes it to the server's log (the default when no delivery is
listed, as in the reference), ``webhook`` POSTs it as JSON.

**Never in the turn's way.** ``Notifier.after_call`` returns at once: matching (which may
parse a long shell command) and delivery run in a background task, each webhook bounded by
``WEBHOOK_TIMEOUT_SECONDS``. A delivery that fails is logged and dropped; a notification is a
report of what already happened, so nothing waits on it and it is not retried.

**No secrets in the log.** A webhook's URL often *is* its credential (a token in the query,
or in the path as Slack's and Discord's are), so failures name only ``scheme://host[:port]``,
and the full URL is registered with ``observability.redact`` before the first request, so no
log line (an HTTP library's debug line included) shows it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

import httpx

from duragent.observability.redact import redact_secrets
from duragent.tools.policy import NotifyTarget, Policy

__all__ = ["NOTIFIER", "WEBHOOK_TIMEOUT_SECONDS", "Notifier", "safe_url"]

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_SECONDS = 10.0
EVENT = "command_notification"


def safe_url(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: what may be logged of a webhook's address."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<webhook>"
    return f"{parts.scheme}://{host}{port}"


class Notifier:
    """Delivers notifications in background tasks it holds until they end."""

    def __init__(self, *, timeout: float = WEBHOOK_TIMEOUT_SECONDS) -> None:
        self._timeout = timeout
        self._tasks: set[asyncio.Task[None]] = set()

    def after_call(
        self,
        policy: Policy,
        policy_type: str,
        command: str,
        *,
        session_id: str,
        agent: str,
        success: bool,
    ) -> None:
        """Notify about a call that ran, if the policy asks for it; returns at once."""
        if not policy.notify.enabled:
            return
        payload = {
            "event": EVENT,
            "session_id": session_id,
            "agent": agent,
            "command": command,
            "success": success,
        }
        task = asyncio.get_running_loop().create_task(
            self._deliver(policy, policy_type, payload), name="policy-notification"
        )
        self._tasks.add(task)
        task.add_done_callback(self._done)

    async def drain(self) -> None:
        """Wait until every notification under way was delivered or given up."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("policy notification failed", exc_info=task.exception())

    async def _deliver(self, policy: Policy, policy_type: str, payload: dict[str, Any]) -> None:
        command = str(payload["command"])
        wanted = await asyncio.to_thread(policy.should_notify, policy_type, command)
        if not wanted:
            return
        deliveries = policy.notify.deliveries or (NotifyTarget("log"),)
        await asyncio.gather(*(self._one(d, payload) for d in deliveries))

    async def _one(self, delivery: NotifyTarget, payload: dict[str, Any]) -> None:
        if delivery.type == "log" or delivery.url is None:
            outcome = "ran" if payload["success"] else "failed"
            log.log(
                logging.INFO if payload["success"] else logging.WARNING,
                "command %s: session=%s agent=%s command=%s",
                outcome,
                payload["session_id"],
                payload["agent"],
                payload["command"],
            )
            return
        await self._post(delivery.url, payload)

    async def _post(self, url: str, payload: dict[str, Any]) -> None:
        shown = safe_url(url)
        redact_secrets(url)  # HTTP libraries log request URLs at debug levels
        try:
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
                async with asyncio.timeout(self._timeout):
                    response = await client.post(url, json=payload)
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            reason = (str(exc) or type(exc).__name__).replace(url, shown)
            log.warning("webhook notification to %s failed: %s", shown, reason)
            return
        if not response.is_success:
            log.warning("webhook notification to %s failed: HTTP %d", shown, response.status_code)


NOTIFIER = Notifier()
"""The server's notifier (one per process, like the tool reaper)."""
