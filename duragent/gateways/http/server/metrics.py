"""``GET /metrics``: the runtime's Prometheus metrics, under the admin endpoints' rules.

Who may read them: the metrics say how busy the server is, which agents and models it runs
and what they cost, so they are not public like ``/livez``. With ``server.admin_token`` set
the request must carry it (``Authorization: Bearer``; 403 otherwise), as ``/api/admin/*``
requires; with only ``server.api_token`` set, that token (401 otherwise), so a scraper
needs no admin rights; with neither, loopback clients only, like every other route. A token
is never read from the URL (a scraper's URL ends up in logs).

With ``server.metrics: false`` nothing is recorded and the route answers 404 saying so.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from duragent.gateways.http.server.problem import ProblemError
from duragent.gateways.http.server.security import check_access
from duragent.gateways.http.services import HttpServices
from duragent.observability.metrics import exposition_content_type

__all__ = ["MetricsRoute"]


class MetricsRoute:
    """The ``/metrics`` handler over ``services``."""

    def __init__(self, services: HttpServices) -> None:
        self._services = services

    def check(self, request: Request) -> None:
        """Raise 401/403 unless the request may read the metrics (see module docstring)."""
        server = self._services.config.server
        if server.admin_token:
            check_access(request, server.admin_token, admin=True)
        else:
            check_access(request, server.api_token, admin=False)

    async def get(self, request: Request) -> Response:
        """The exposition in Prometheus text format."""
        self.check(request)
        metrics = self._services.turns.metrics
        if metrics is None:
            raise ProblemError(404, "metrics are off: set server.metrics: true in duragent.yaml")
        # On the loop: a few hundred series render in well under a millisecond.
        return Response(metrics.exposition(), media_type=exposition_content_type())
