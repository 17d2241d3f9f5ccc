"""The starlette application: routes, error handling, and the services port it calls.

The app depends only on ``HttpServices`` (a Protocol the runtime implements), never on the
runtime itself, so the layering stays one-way.
"""

from __future__ import annotations

from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from duragent.agents import Agent, AgentCatalog
from duragent.errors import AgentNotFoundError
from duragent.gateways.http.problem import problem

__all__ = ["HttpServices", "agent_detail", "build_app"]


class HttpServices(Protocol):
    """What the HTTP front end needs from the rest of the system."""

    version: str
    workspace_hash: str

    @property
    def catalog(self) -> AgentCatalog:
        """The agents currently loaded."""
        ...


def agent_detail(agent: Agent) -> dict[str, Any]:
    """The reference's agent detail shape (prompt contents, not paths; soul omitted)."""
    meta = agent.manifest.metadata
    model = agent.model
    model_out: dict[str, Any] = {"provider": model.provider, "name": model.name}
    for key in ("temperature", "max_input_tokens", "max_output_tokens", "base_url"):
        value = getattr(model, key)
        if value is not None:
            model_out[key] = value
    metadata: dict[str, Any] = {"name": meta.name}
    if meta.description is not None:
        metadata["description"] = meta.description
    if meta.version is not None:
        metadata["version"] = meta.version
    if meta.labels:
        metadata["labels"] = dict(meta.labels)
    spec: dict[str, Any] = {"model": model_out}
    if agent.system_prompt is not None:
        spec["system_prompt"] = agent.system_prompt
    if agent.instructions is not None:
        spec["instructions"] = agent.instructions
    return {
        "api_version": agent.manifest.api_version,
        "kind": agent.manifest.kind,
        "metadata": metadata,
        "spec": spec,
    }


def build_app(services: HttpServices) -> Starlette:
    """The ASGI app serving ``services``."""

    async def livez(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> Response:
        return JSONResponse({"status": "ok", "workspace_hash": services.workspace_hash})

    async def version(_: Request) -> Response:
        return JSONResponse(
            {"version": services.version, "commit": None, "build_date": None, "variant": "python"}
        )

    async def list_agents(_: Request) -> Response:
        agents = []
        for name in services.catalog.names():
            agent = services.catalog.agents[name]
            entry: dict[str, Any] = {"name": name}
            if agent.description is not None:
                entry["description"] = agent.description
            if agent.manifest.metadata.version is not None:
                entry["version"] = agent.manifest.metadata.version
            agents.append(entry)
        return JSONResponse({"agents": agents})

    async def get_agent(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            agent = services.catalog.get(name)
        except AgentNotFoundError as exc:
            return problem(404, str(exc), instance=request.url.path)
        return JSONResponse(agent_detail(agent))

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return problem(status, detail, instance=request.url.path)

    routes = [
        Route("/livez", livez),
        Route("/readyz", readyz),
        Route("/version", version),
        Route("/api/v1/agents", list_agents),
        Route("/api/v1/agents/{name}", get_agent),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})
