"""Validation of ``server.allowed_hosts`` and ``server.allowed_origins`` entries.

Both are compared with what a browser sends (``Host: name[:port]``, ``Origin:
scheme://name[:port]``), so an entry is normalised to that form (lower case, no trailing
slash) and anything a browser would never send (a path, a user, a wildcard) is refused with a
message saying which form is expected, rather than silently never matching.
"""

from __future__ import annotations

import re

__all__ = ["check_host_name", "check_origin"]

_HOST = re.compile(r"^(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::\d{1,5})?$")


def check_host_name(entry: str) -> str:
    """``entry`` as a lower-case ``name`` or ``name:port``; ValueError when it is not one."""
    host = entry.strip().lower()
    if not _HOST.match(host):
        raise ValueError(
            f"{entry!r} is not a host name: write it as the browser's Host header shows it, "
            "e.g. 'myhost.local' or 'myhost.local:8080' (no scheme, path or wildcard)"
        )
    return host


def check_origin(entry: str) -> str:
    """``entry`` as a lower-case ``scheme://name[:port]``; ValueError when it is not one."""
    origin = entry.strip().lower().rstrip("/")
    scheme, sep, host = origin.partition("://")
    if not sep or scheme not in ("http", "https") or not _HOST.match(host):
        raise ValueError(
            f"{entry!r} is not an origin: write it as the browser's Origin header shows it, "
            "e.g. 'http://localhost:3000' (scheme, host and optional port; no path)"
        )
    return origin
