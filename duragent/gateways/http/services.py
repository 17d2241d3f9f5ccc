"""The port the HTTP front end calls: implemented by the runtime, never imported from it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from duragent.agents import AgentCatalog
from duragent.agents.reloading import Reloaded
from duragent.cluster import OwnerRelay
from duragent.config import WorkspaceConfig
from duragent.frontkit import WebhookReceiver
from duragent.frontkit.delivery import Delivery
from duragent.gateways.http.api.schedules import SchedulesPort
from duragent.gateways.http.cluster.forwarding import SessionForwarding
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns import TurnRunner

__all__ = ["HttpServices"]


class HttpServices(Protocol):
    """What the HTTP front end needs from the rest of the system."""

    version: str
    workspace_hash: str

    @property
    def catalog(self) -> AgentCatalog:
        """The agents currently loaded."""
        ...

    @property
    def config(self) -> WorkspaceConfig:
        """The workspace configuration (server limits and tokens)."""
        ...

    @property
    def turns(self) -> TurnRunner:
        """The one turn runner."""
        ...

    @property
    def tasks(self) -> BackgroundTasks:
        """The owner of tasks that outlive a request (a turn after a 408, a stream's clean-up)."""
        ...

    @property
    def schedule_desk(self) -> SchedulesPort | None:
        """The scheduler's JSON operations (None when the scheduler is disabled)."""
        ...

    @property
    def forwarding(self) -> SessionForwarding | None:
        """Serving sessions other nodes own (None: one node, files or memory)."""
        ...

    @property
    def relay(self) -> OwnerRelay | None:
        """Chat messages other nodes hand to this one (None: one node)."""
        ...

    def chat_delivery(self, gateway: str) -> Delivery | None:
        """What delivers a turn's outcome into a chat of ``gateway`` (None: not started).

        An approval of a chat's session decided over HTTP resumes a turn whose reply belongs
        in that chat as well as in the HTTP answer.
        """
        ...

    def starting(self) -> str | None:
        """Why a first message would still wait for start-up work, or None when it would not."""
        ...

    def webhooks(self) -> Mapping[str, WebhookReceiver]:
        """Paths a chat gateway receives updates on (Telegram's webhook mode), by path."""
        ...

    def gateway_states(self) -> Mapping[str, str]:
        """Each chat gateway's state for ``/readyz`` (``running``, ``failed: …``), by name."""
        ...

    def services_down(self) -> Mapping[str, str]:
        """Services that cannot do their work (did not start, loop ended), by name, with why.

        ``/readyz`` is 503 naming them: the server must not look ready for work it will not
        do. Chat gateways are not among them (their states are ``gateway_states``).
        """
        ...

    def skipped_records(self) -> Mapping[str, list[dict[str, str]]]:
        """Records set aside rather than loaded (moved aside, with why), by kind."""
        ...

    def request_shutdown(self) -> bool:
        """Ask the process to stop; False if a shutdown is already under way."""
        ...

    async def reload(self) -> Reloaded:
        """Re-read the agents directory and take what the agents declare (their schedules).

        What the reload changed comes back with the catalog now served.
        """
        ...
