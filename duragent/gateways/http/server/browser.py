"""Checks that keep web pages in the user's browser away from the API.

A server on 127.0.0.1 without tokens trusts every local client. A web page the user visits
is not one, but the browser will still send its requests: a cross-site ``POST`` with a
``text/plain`` body needs no CORS preflight (CSRF), and a DNS-rebinding page (a name of the
attacker's that resolves to 127.0.0.1) can even read the answers, since to the browser it is
same-origin. Three checks close this, before routing and before any slot is taken:

- **Host** (loopback mode only, i.e. when the route family has no token): the name must be
  loopback (``localhost``, ``*.localhost``, ``127.x.x.x``, ``[::1]``, any port) or listed in
  ``server.allowed_hosts``; a rebinding page sends its own name. 403. With a token the server
  is meant to be reached by any name, and the page does not know the token. The public routes
  (health, version, OpenAPI) are exempt: they are open to any client anyway, and a container
  probe addresses the server by its IP.
- **Origin** (always, when the header is present): a loopback origin, the server's own
  (same host and port as ``Host``), or one of ``server.allowed_origins``. ``null`` (sandboxed
  frames, files) is refused. 403. Clients that are not browsers send no ``Origin``.
- **Content type** (loopback mode only): a request with a body must say ``application/json``
  (a browser can only send ``application/json`` cross-site after a preflight, which this
  server never grants). 415. With a token a page cannot forge the request anyway, so scripts
  written for the reference that post JSON without the header (``curl -d``) keep working.
  The one exception is a message with files (``multipart/form-data`` on
  ``/api/v1/sessions/{id}/messages`` and ``…/stream``), which a form could post cross-site:
  such a page would still need the session's id, a random ULID it cannot read from this
  server (no CORS is ever granted), and a browser that sends no ``Origin`` with it.

Which family a path belongs to: ``/api/admin/…`` is guarded by ``admin_token``, everything
else (API, health, and any later web console) by ``api_token``.
"""

from __future__ import annotations

import ipaddress

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from duragent.config.workspace import ServerConfig
from duragent.gateways.http.server.media_limits import takes_form_uploads
from duragent.gateways.http.server.problem import problem

__all__ = ["BrowserGuard", "has_body", "is_loopback_name", "request_problem", "split_host"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PUBLIC_PATHS = frozenset({"/livez", "/readyz", "/version", "/openapi.json"})


def split_host(value: str) -> tuple[str, str]:
    """``(name, port)`` of a Host value (``[::1]:80`` → ``("::1", "80")``); lower-case name."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else ""
    name, _, port = value.partition(":") if value.count(":") == 1 else (value, "", "")
    return name, port


def is_loopback_name(name: str) -> bool:
    """True for ``localhost``, ``*.localhost`` and loopback IP addresses (127/8, ::1)."""
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    name, _ = split_host(host)
    return is_loopback_name(name) or host.strip().lower() in allowed or name in allowed


def _origin_allowed(origin: str, host: str | None, allowed: tuple[str, ...]) -> bool:
    origin = origin.strip().lower().rstrip("/")
    scheme, sep, netloc = origin.partition("://")
    if not sep or scheme not in ("http", "https"):
        return False  # includes "null"
    if origin in allowed or is_loopback_name(split_host(netloc)[0]):
        return True
    return host is not None and netloc == host.strip().lower()


def request_problem(
    method: str,
    path: str,
    headers: Headers,
    server: ServerConfig,
    public: frozenset[str] = frozenset(),
) -> tuple[int, str] | None:
    """``(status, detail)`` when the request must be refused, else None.

    ``public``: more paths exempt from the Host check (a chat platform's webhook, which
    authenticates with its own secret).
    """
    token = server.admin_token if path.startswith("/api/admin/") else server.api_token
    host = headers.get("host")
    checked = not token and path not in PUBLIC_PATHS and path not in public
    if checked and host is not None and not _host_allowed(host, server.allowed_hosts):
        return 403, (
            f"Host {host!r} is not a loopback name; without a token this server answers only "
            "requests addressed to localhost (list other names in server.allowed_hosts)"
        )
    origin = headers.get("origin")
    if origin is not None and not _origin_allowed(origin, host, server.allowed_origins):
        return 403, (
            f"requests from the web page at {origin!r} are refused (cross-origin); "
            "list trusted origins in server.allowed_origins"
        )
    if not token and method in _BODY_METHODS and has_body(headers):
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        forms = takes_form_uploads(path)
        if media == "multipart/form-data" and forms:
            return None
        if media != "application/json":
            shown = media or "none"
            allowed = "application/json or multipart/form-data" if forms else "application/json"
            return 415, f"request bodies must be {allowed} (got {shown})"
    return None


def has_body(headers: Headers) -> bool:
    """True when the request announces a body (a length above 0, or chunked)."""
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "transfer-encoding" in headers


class BrowserGuard:
    """ASGI middleware applying :func:`request_problem` to every HTTP request."""

    def __init__(
        self, app: ASGIApp, server: ServerConfig, public: frozenset[str] = frozenset()
    ) -> None:
        self.app = app
        self.server = server
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused request with problem+json; pass the others on."""
        if scope["type"] == "http":
            refused = request_problem(
                scope["method"], scope["path"], Headers(scope=scope), self.server, self.public
            )
            if refused is not None:
                status, detail = refused
                await problem(status, detail, instance=scope["path"])(scope, receive, send)
                return
        await self.app(scope, receive, send)
