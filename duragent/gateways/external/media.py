"""An external gateway's files downloaded: the ``url`` of its ``media`` content, over HTTP(S).

A gateway plugin reports a photo or voice note as ``{"type": "media", "media_type", "url",
"caption"}``; the URL is the platform's file link or one the plugin serves itself. The
download goes through the ``web`` tool's connection guard (``tools.web_guard``): the host is
resolved once and every address checked before connecting (redirects too), so a link cannot
reach this machine's or the network's private services by a name, a redirect or a DNS
answer that changes. Not public, an address is refused unless ``media.allow_private`` lists
it; the default lists loopback, where a plugin on this machine serves its own files (every
external gateway is a child of this server). The body is read up to the kind's limit and no
further (a ``Content-Length`` over it is refused before reading), uncompressed on the wire.

A 404, 410, 403 or 401 (the link expired, the file is gone) and a refused address are final;
a 5xx, 429, 408 or a transport failure may pass, and is tried again by the kit.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx

from duragent.core.net_rules import AllowRule, parse_allow_rule
from duragent.frontkit import Fetched, MediaRef, MediaTooLargeError, MediaUnavailableError
from duragent.tools.web_guard import ForbiddenAddress, GuardedTransport

__all__ = ["DEFAULT_ALLOW_PRIVATE", "DOWNLOAD_SECONDS", "GatewayMedia"]

DEFAULT_ALLOW_PRIVATE = ("127.0.0.0/8", "::1")
"""Loopback: a plugin on this machine serving the files it reports."""
DOWNLOAD_SECONDS = 120.0
"""A file's whole download (connecting, redirects, the body)."""
_RETRY = frozenset({408, 425, 429, 500, 502, 503, 504})
_MAX_REDIRECTS = 5


class GatewayMedia:
    """Files at a gateway's links (the kit's ``MediaSource``; see the module docstring)."""

    def __init__(
        self,
        allow_private: Sequence[str | AllowRule] = DEFAULT_ALLOW_PRIVATE,
        *,
        timeout: float = DOWNLOAD_SECONDS,
    ) -> None:
        self._rules = tuple(
            rule if isinstance(rule, AllowRule) else parse_allow_rule(rule)
            for rule in allow_private
        )
        self._timeout = timeout

    async def fetch(self, ref: MediaRef, max_bytes: int) -> Fetched:
        """The bytes at ``ref.url`` (errors as the kit's: ``frontkit.media``)."""
        url = ref.url or ""
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            raise MediaUnavailableError("its link is not an http(s) URL")
        try:
            async with (
                httpx.AsyncClient(
                    transport=GuardedTransport(self._rules),
                    timeout=self._timeout,
                    follow_redirects=True,
                    max_redirects=_MAX_REDIRECTS,
                    headers={"Accept-Encoding": "identity"},
                ) as client,
                client.stream("GET", url) as response,
            ):
                _check_status(response)
                return Fetched(await _body(response, max_bytes), _mime(response))
        except ForbiddenAddress as exc:
            reason = str(exc).split(";", 1)[0]
            raise MediaUnavailableError(
                f"its link is refused: {reason} (media.allow_private in duragent.yaml opens it)"
            ) from exc
        except (httpx.TooManyRedirects, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise MediaUnavailableError(f"its link cannot be followed: {exc}") from exc
        except (httpx.TransportError, TimeoutError) as exc:
            raise MediaUnavailableError(f"the download failed: {exc}", transient=True) from exc


def _check_status(response: httpx.Response) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    said = f"the file host answered {status} {response.reason_phrase}".rstrip()
    raise MediaUnavailableError(said, transient=status in _RETRY or status >= 500)


async def _body(response: httpx.Response, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise MediaTooLargeError("over the limit", size=int(declared))
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > max_bytes:
            raise MediaTooLargeError("over the limit")
    return bytes(body)


def _mime(response: httpx.Response) -> str | None:
    said = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return said if "/" in said and said != "application/octet-stream" else None
