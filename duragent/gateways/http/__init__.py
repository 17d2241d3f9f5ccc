"""The HTTP front end (starlette + uvicorn): health, agents, sessions, turns as JSON or SSE.

Turns run through ``duragent.turns``; what every front end shares (waiting for a turn that
outlives its request, the outcomes to match on, the approval errors) comes from
``duragent.frontkit`` and ``duragent.turns``, not from copies here.

Layout, one concern per subpackage:

- ``app``: :func:`build_app`, the starlette app: every route, the access rule each route
  family follows, the middleware and the problem+json answer for each error class (and the
  health, version, agent and admin routes, small enough to stay with it);
- ``services``: :class:`HttpServices`, the port the runtime implements (never imported here);
- ``server/``: plumbing every route shares: uvicorn in the runtime's loop (:class:`HttpServer`),
  the accept loop and timeouts, the connection limit, auth, browser checks, problem+json,
  readiness and ``/metrics``;
- ``api/``: duragent's REST API under ``/api/v1`` (sessions, the SSE stream, attachments in
  and out, cut turns, pins, schedules, paging);
- ``openai/``: the OpenAI-compatible API under ``/v1`` (routes, wire format, stream, errors);
- ``openapi/``: the hand-written OpenAPI document served at ``/openapi.json``;
- ``console/``: the web console at ``/ui`` and its static files;
- ``cluster/``: several nodes on one store: forwarding a session's request to its owner, and
  the path other nodes hand chat messages to;
- ``webhooks``: the paths chat platforms POST their updates to (served at the chat's owner).
"""

from __future__ import annotations

from duragent.gateways.http.app import HttpServices, build_app
from duragent.gateways.http.server.uvicorn_server import HttpServer

__all__ = ["HttpServer", "HttpServices", "build_app"]
