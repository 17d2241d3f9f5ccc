"""The HTTP front end (starlette + uvicorn): health, agents and, later, sessions and SSE."""

from __future__ import annotations

from duragent.gateways.http.app import HttpServices, build_app
from duragent.gateways.http.server import HttpServer

__all__ = ["HttpServer", "HttpServices", "build_app"]
