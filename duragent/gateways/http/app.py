"""The starlette application: routes, access rules, and problem+json for every error.

The app depends only on ``HttpServices`` (a Protocol the runtime implements), never on the
runtime itself, so the layering stays one-way.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from duragent.agents import Agent
from duragent.agents.exposure import served_value
from duragent.errors import AgentNotFoundError, StorageError
from duragent.gateways.http.api.pins import PinRoutes
from duragent.gateways.http.api.schedules import ScheduleRoutes
from duragent.gateways.http.api.sessions import SessionRoutes
from duragent.gateways.http.api.stream import OpenStreams
from duragent.gateways.http.cluster.relay import RELAY_PATH, relay_route
from duragent.gateways.http.console.routes import console_routes
from duragent.gateways.http.openai.errors import OpenAIErrors
from duragent.gateways.http.openai.routes import OpenAIRoutes
from duragent.gateways.http.openapi.document import openapi_document
from duragent.gateways.http.server.browser import BrowserGuard
from duragent.gateways.http.server.crash import CrashGuard
from duragent.gateways.http.server.health import ServerHealth
from duragent.gateways.http.server.limits import ConcurrencyLimit
from duragent.gateways.http.server.media_limits import UploadLimits
from duragent.gateways.http.server.metrics import MetricsRoute
from duragent.gateways.http.server.problem import ProblemError, problem
from duragent.gateways.http.server.security import check_access
from duragent.gateways.http.services import HttpServices
from duragent.gateways.http.webhooks import webhook_routes
from duragent.store import is_database_unreachable, is_disk_full
from duragent.turns import SessionNotFoundError, SessionQuarantinedError

__all__ = ["HttpServices", "agent_detail", "build_app"]

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]


def agent_detail(agent: Agent) -> dict[str, Any]:
    """The reference's agent detail shape (prompt contents, not paths; soul omitted)."""
    meta = agent.manifest.metadata
    model = agent.model
    model_out: dict[str, Any] = {}
    for key in ("provider", "name", "temperature", "max_input_tokens", "max_output_tokens"):
        value = getattr(model, key)
        if value is not None:
            model_out[key] = served_value(agent.written, ("spec", "model", key), value)
    if model.base_url is not None:  # as written, never with credentials (agents/exposure.py)
        model_out["base_url"] = served_value(
            agent.written, ("spec", "model", "base_url"), model.base_url
        )
    metadata: dict[str, Any] = {"name": meta.name}
    if meta.description is not None:
        metadata["description"] = served_value(
            agent.written, ("metadata", "description"), meta.description
        )
    if meta.version is not None:
        metadata["version"] = served_value(agent.written, ("metadata", "version"), meta.version)
    if meta.labels:
        metadata["labels"] = {
            k: served_value(agent.written, ("metadata", "labels", k), v)
            for k, v in meta.labels.items()
        }
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


def _route(path: str, **handlers: Handler) -> Route:
    """One route per path serving every method it supports (keyword = method name).

    A single route per path makes an unsupported method a 405 whose ``Allow`` header lists
    all the methods of the path (one route per method would name only its own). HEAD is
    served by the GET handler, as starlette does for GET routes.
    """
    if "GET" in handlers:
        handlers.setdefault("HEAD", handlers["GET"])

    async def dispatch(request: Request) -> Response:
        return await handlers[request.method](request)

    return Route(path, dispatch, methods=list(handlers))


def build_app(services: HttpServices) -> Starlette:
    """The ASGI app serving ``services``."""
    streams = OpenStreams()  # told by HttpServer.stop that the server stops (api/stream.py)
    routes_impl = SessionRoutes(services, streams)
    openai = OpenAIRoutes(services, streams)
    schedules = ScheduleRoutes(lambda: services.schedule_desk)
    pins = PinRoutes(services)
    health = ServerHealth(services.config.server.max_connections)

    def api(handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            check_access(request, services.config.server.api_token, admin=False)
            return await handler(request)

        return guarded

    forwarding = services.forwarding

    def session_api(handler: Handler) -> Handler:
        """``api`` for one session's routes: served where the session lives (cluster/forwarding)."""
        if forwarding is None:
            return api(handler)
        hops = forwarding

        async def guarded(request: Request) -> Response:
            token = services.config.server.api_token
            hop = await hops.verify(request)  # a signed hop: the first node checked the client
            if not hop or token:
                check_access(request, token, admin=False)
            return await hops.serve(request, handler, hop=hop)

        return guarded

    def admin(handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            check_access(request, services.config.server.admin_token, admin=True)
            return await handler(request)

        return guarded

    async def livez(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_: Request) -> Response:
        # Not ready while the session store cannot write (see store/health.py): the last
        # write failed and a probe write still fails. Healthy: no disk access at all.
        extra: dict[str, object] = {"workspace_hash": services.workspace_hash, "pid": os.getpid()}
        gateways = dict(services.gateway_states())
        if gateways:  # a chat platform being down does not stop the HTTP API being ready
            extra["gateways"] = gateways
        down = dict(services.services_down())  # a service that cannot do its work does
        if down:
            extra["services"] = {name: f"down: {why}" for name, why in down.items()}
        skipped = dict(services.skipped_records())  # bad records set aside: reported only
        if skipped:
            extra["skipped_records"] = skipped
        store_health = services.turns.sessions.store_health
        failure = await asyncio.to_thread(store_health.check)  # files: no I/O unless failed
        # which store, as the API's 503s name it ("database": PostgreSQL, reached by check())
        kind = "database" if services.config.store.backend == "postgres" else "files"
        extra["storage"] = {"kind": kind, "writable": failure is None}
        if failure:
            extra["storage"] = {"kind": kind, "writable": False, "error": str(failure)}
            reason: str | None = f"the session store cannot write: {failure}"
        elif down:
            reason = "; ".join(f"service {name} cannot run: {why}" for name, why in down.items())
        else:  # see server/health.py for what ready means; ready also means started
            reason = services.starting() or health.not_ready_reason()
        if reason is not None:  # workspace_hash: the launcher still knows us
            return problem(503, reason, instance="/readyz", extra=extra)
        # the pid lets a client check that this is the server named in the workspace's lock
        return JSONResponse({"status": "ok", **extra})

    async def version(_: Request) -> Response:
        return JSONResponse(
            {"version": services.version, "commit": None, "build_date": None, "variant": "python"}
        )

    async def openapi(_: Request) -> Response:
        return JSONResponse(openapi_document(services.version))

    async def list_agents(_: Request) -> Response:
        agents = []
        for name in services.catalog.names():
            agent = services.catalog.agents[name]
            entry: dict[str, Any] = {"name": name}
            if agent.description is not None:
                path = ("metadata", "description")
                entry["description"] = served_value(agent.written, path, agent.description)
            if agent.manifest.metadata.version is not None:
                entry["version"] = agent.manifest.metadata.version
            agents.append(entry)
        return JSONResponse({"agents": agents})

    async def get_agent(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            agent = services.catalog.get(name)
        except AgentNotFoundError as exc:
            raise ProblemError(404, str(exc)) from None
        return JSONResponse(agent_detail(agent))

    async def shutdown(_: Request) -> Response:
        if not services.request_shutdown():
            raise ProblemError(409, "Shutdown already in progress")
        # JSON like every other answer; ``message`` is the reference's plain-text answer.
        return JSONResponse({"status": "shutting_down", "message": "Shutdown initiated"})

    async def reload_agents(_: Request) -> Response:
        done = await services.reload()
        catalog = done.catalog
        names = catalog.names()
        # ``message`` is the reference's plain-text answer; ``broken``: folders not loaded.
        broken = [{"path": str(path), "error": str(err)} for path, err in catalog.broken.items()]
        return JSONResponse(
            {
                "reloaded": len(names),
                "agents": names,
                "broken": broken,
                "message": f"Reloaded {len(names)} agents",
                # model endpoints or key sources changed since the server started (a WARNING
                # in the log too): an edited agent.yaml could send the provider key elsewhere
                "endpoint_changes": list(catalog.endpoint_changes),
                # what this reload changed: agents (and in each, which parts) and the
                # schedules they declare (``decl_<agent>_<name>``); notes on where it applies
                "changes": {
                    "agents": done.agents.document()
                    | {"parts": {name: list(parts) for name, parts in done.parts.items()}},
                    "schedules": done.schedules.document(),
                },
                "notes": list(done.notes),
            }
        )

    async def on_problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ProblemError)
        response = problem(exc.status, exc.detail, instance=request.url.path, extra=exc.extra)
        response.headers.update(exc.headers)
        return response

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        response = problem(exc.status_code, exc.detail, instance=request.url.path)
        for name, value in (exc.headers or {}).items():
            if name.lower() == "allow":  # starlette joins a set: give a stable order
                value = ", ".join(sorted(m.strip() for m in value.split(",")))
            response.headers[name] = value
        return response

    async def on_session_missing(request: Request, _: Exception) -> Response:
        # A session deleted while a request on it was under way (the route checked it first).
        return problem(404, "session not found", instance=request.url.path)

    async def on_quarantined(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SessionQuarantinedError)
        extra = {"session_id": exc.session_id, "session_status": "quarantined"}
        return problem(
            409, str(exc), instance=request.url.path, extra=extra | {"reason": exc.reason}
        )

    async def on_storage(request: Request, exc: Exception) -> Response:
        # The disk refused a read or write: nothing saved is lost, and an append that failed
        # was rolled back (so not acknowledged). 507 when out of space, else 503 (transient).
        assert isinstance(exc, StorageError)
        # A database that cannot be reached (PostgreSQL store) comes back by itself: say so.
        full = is_disk_full(exc)
        away = is_database_unreachable(exc)
        log.error("%s %s: %s", request.method, request.url.path, exc)
        when = "disk space is freed" if full else "the cause is fixed"
        if away:
            when = "the database answers again (the server reconnects by itself)"
        code = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        extra: dict[str, object] = {"operation": exc.operation, "errno": code, "file": exc.filename}
        extra["storage"] = "database" if away else "files"
        if exc.recorded_seq is None:
            detail = (
                f"{exc}. Nothing already saved was lost, and what could not be written was not "
                f"recorded: retry once {when}."
            )
        else:  # the turn's message is on disk: a retry would record it a second time
            detail = (
                f"{exc}: it stays in the conversation, and your next message continues from it "
                f"once {when}. Nothing already saved was lost."
            )
            extra |= {"message_recorded": True, "message_seq": exc.recorded_seq}
        response = problem(507 if full else 503, detail, instance=request.url.path, extra=extra)
        if not full:
            response.headers["Retry-After"] = "5"
        return response

    v1 = "/api/v1"
    routes = [
        _route("/livez", GET=livez),
        _route("/readyz", GET=readyz),
        _route("/version", GET=version),
        _route("/openapi.json", GET=openapi),
        _route("/metrics", GET=MetricsRoute(services).get),
        _route(f"{v1}/agents", GET=api(list_agents)),
        _route(f"{v1}/agents/{{name}}", GET=api(get_agent)),
        _route(f"{v1}/sessions", GET=api(routes_impl.list), POST=api(routes_impl.create)),
        _route(
            f"{v1}/sessions/{{session_id}}",
            GET=session_api(routes_impl.get),
            DELETE=session_api(routes_impl.delete),
        ),
        _route(
            f"{v1}/sessions/{{session_id}}/messages",
            GET=session_api(routes_impl.history),
            POST=session_api(routes_impl.send),
        ),
        _route(f"{v1}/sessions/{{session_id}}/stream", POST=session_api(routes_impl.stream)),
        _route(
            f"{v1}/sessions/{{session_id}}/attachments/{{sha256}}",
            GET=session_api(routes_impl.attachment),
        ),
        _route(f"{v1}/sessions/{{session_id}}/approve", POST=session_api(routes_impl.approve)),
        _route(f"{v1}/sessions/{{session_id}}/end", POST=session_api(routes_impl.end)),
        _route(
            f"{v1}/sessions/{{session_id}}/pins",
            GET=session_api(pins.list),
            POST=session_api(pins.create),
        ),
        _route(f"{v1}/sessions/{{session_id}}/pins/{{pin_id}}", DELETE=session_api(pins.delete)),
        _route(f"{v1}/schedules", GET=api(schedules.list), POST=api(schedules.create)),
        _route(
            f"{v1}/schedules/{{schedule_id}}",
            GET=api(schedules.get),
            DELETE=api(schedules.cancel),
        ),
        _route(f"{v1}/schedules/{{schedule_id}}/run", POST=api(schedules.run)),
        _route("/v1/models", GET=api(openai.models)),
        _route("/v1/models/{model}", GET=api(openai.model)),
        _route("/v1/chat/completions", POST=session_api(openai.chat)),  # at its owner
        _route("/api/admin/v1/shutdown", POST=admin(shutdown)),
        _route("/api/admin/v1/reload-agents", POST=admin(reload_agents)),
    ]
    webhooks = services.webhooks()
    routes += webhook_routes(webhooks, forwarding)
    public = set(webhooks)
    if forwarding is not None and services.relay is not None:  # chat messages between nodes
        routes.append(relay_route(services.relay, forwarding))
        public.add(RELAY_PATH)
    routes += console_routes(services)  # /ui: the web console (console/routes.py)
    app = Starlette(
        routes=routes,
        middleware=[  # outermost first; an unclaimed exception reaches CrashGuard
            Middleware(OpenAIErrors),  # problem+json → OpenAI's shape under /v1/
            Middleware(CrashGuard),
            Middleware(BrowserGuard, server=services.config.server, public=frozenset(public)),
            Middleware(ConcurrencyLimit, limit=health.slots, health=health),
        ],
        exception_handlers={
            ProblemError: on_problem,
            HTTPException: on_http_error,
            SessionNotFoundError: on_session_missing,
            SessionQuarantinedError: on_quarantined,
            StorageError: on_storage,
        },
    )
    app.state.server_config = services.config.server  # read by HttpServer (server/uvicorn_server)
    app.state.health = health
    app.state.upload_limits = UploadLimits.of(services.config)  # media.max_bytes, for uploads
    app.state.open_streams = streams
    return app
