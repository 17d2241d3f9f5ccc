"""The HTTP front end (starlette + uvicorn): health, agents, sessions, turns as JSON or SSE.

Turns run through ``duragent.turns``; what every front end shares (waiting for a turn that
outlives its request, the outcomes to match on, the approval errors) comes from
``duragent.frontkit`` and ``duragent.turns``, not from copies here.
"""

from __future__ import annotations

from duragent.gateways.http.app import HttpServices, build_app
from duragent.gateways.http.server import HttpServer

__all__ = ["HttpServer", "HttpServices", "build_app"]
