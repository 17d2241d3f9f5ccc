"""``/api/v1/schedules``: list, read with run history, create, cancel, run now.

The scheduler is another front end, so HTTP reaches it only through the ``SchedulesPort``
the runtime hands over (``HttpServices.schedule_desk``; None when ``scheduler.enabled``
is false: 503). Same access rules and problem+json as every other route; the desk's errors
map to statuses: not found 404, a bad field 400 (the message names it, its value and the
range allowed), refused 409, the scheduler not running 503.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from duragent.errors import (
    ConfigError,
    DuragentError,
    NotFoundError,
    ServiceUnavailableError,
    StorageError,
)
from duragent.gateways.http.server.problem import ProblemError
from duragent.gateways.http.server.security import read_json

__all__ = ["ScheduleRoutes", "SchedulesPort"]


class SchedulesPort(Protocol):
    """What HTTP asks of the scheduler (``duragent.scheduler.desk`` implements it)."""

    def list(self, agent: str | None = None) -> list[dict[str, Any]]:
        """Every schedule (one agent's when given)."""
        ...

    async def get(self, schedule_id: str, runs: int = 50) -> dict[str, Any]:
        """One schedule with its recent runs."""
        ...

    async def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A new schedule from a file-format body."""
        ...

    async def cancel(self, schedule_id: str) -> dict[str, Any]:
        """Cancel it."""
        ...

    def run_now(self, schedule_id: str) -> bool:
        """Start a run now; False when one is running."""
        ...


class ScheduleRoutes:
    """The handlers (see module docstring)."""

    def __init__(self, desk: Callable[[], SchedulesPort | None]) -> None:
        self._desk = desk

    def _open(self) -> SchedulesPort:
        desk = self._desk()
        if desk is None:
            raise ProblemError(503, "the scheduler is disabled (scheduler.enabled: false)")
        return desk

    def _call(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except DuragentError as exc:
            raise _answer(exc) from None

    async def _await(self, action: Awaitable[Any]) -> Any:
        """``_call`` for the desk's operations that read or write storage (from a thread)."""
        try:
            return await action
        except DuragentError as exc:
            raise _answer(exc) from None

    async def list(self, request: Request) -> Response:
        """GET /api/v1/schedules[?agent=name]."""
        desk = self._open()
        agent = request.query_params.get("agent") or None
        return JSONResponse({"schedules": self._call(lambda: desk.list(agent))})

    async def create(self, request: Request) -> Response:
        """POST /api/v1/schedules {agent, schedule, payload, destination?, retry?} → 201."""
        desk = self._open()
        body = await read_json(request)
        return JSONResponse(await self._await(desk.create(body)), status_code=201)

    async def get(self, request: Request) -> Response:
        """GET /api/v1/schedules/{id}: the schedule, its state and its recent runs."""
        desk = self._open()
        sched_id = request.path_params["schedule_id"]
        return JSONResponse(await self._await(desk.get(sched_id)))

    async def cancel(self, request: Request) -> Response:
        """DELETE /api/v1/schedules/{id}: cancelled (its file and run log are kept)."""
        desk = self._open()
        sched_id = request.path_params["schedule_id"]
        return JSONResponse(await self._await(desk.cancel(sched_id)))

    async def run(self, request: Request) -> Response:
        """POST /api/v1/schedules/{id}/run → 202 (409 while a run is in progress)."""
        desk = self._open()
        sched_id = request.path_params["schedule_id"]
        if not self._call(lambda: desk.run_now(sched_id)):
            raise ProblemError(409, f"schedule '{sched_id}' is running now")
        return JSONResponse({"schedule_id": sched_id, "started": True}, status_code=202)


def _answer(exc: DuragentError) -> Exception:
    """The HTTP answer to a desk's error: 404, 400, 409, 503, or storage's own (503 / 507).

    A bad field (400) names it, its value and the range allowed, in the text and as
    ``field``, ``value`` and ``allowed``; a scheduler that cannot run (it did not start, its
    loop ended) answers 503 rather than accept a schedule nothing would run.
    """
    if isinstance(exc, NotFoundError):
        return ProblemError(404, str(exc))
    if isinstance(exc, ConfigError):
        extra = {"field": exc.field, "value": _json_value(exc.value), "allowed": exc.allowed}
        return ProblemError(400, str(exc), extra={k: v for k, v in extra.items() if v})
    if isinstance(exc, ServiceUnavailableError):
        return ProblemError(503, str(exc))
    if isinstance(exc, StorageError):
        return exc  # the app's own answer (503 / 507)
    return ProblemError(409, str(exc))


def _json_value(value: object) -> object:
    """``value`` as JSON carries it: numbers beyond 2**53 as text (JavaScript rounds them)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 else str(value)
    return repr(value)
