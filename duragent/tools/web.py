"""The ``web`` tool: fetch a page as Markdown, or search the web with Brave Search.

``fetch`` accepts only http and https URLs (redirects followed, at most 5), connects only to
public addresses unless ``allow_private`` opens others (checked after DNS resolution, on every
redirect, pinned for the connection: see :mod:`duragent.tools.web_guard`), reads at most
``max_body`` (1 MiB) DECODED bytes at every content-encoding layer while streaming (see
:mod:`duragent.tools.web_body`), gives up after 30 s in total (not per read, so a server
that trickles bytes cannot hold the call), converts HTML to Markdown without scripts and
styles on a thread, returns other text as is, refuses binary content, and caps what the model
reads at 50 KiB. ``search`` needs ``BRAVE_API_KEY`` in the tool context's environment.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from duragent.core.messages import ToolDefinition
from duragent.core.net_rules import AllowRule, parse_allow_rule
from duragent.tools._args import builtin_invocation, int_arg, str_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.tools.web_body import ACCEPT_ENCODING, BodyError, read_body
from duragent.tools.web_guard import ForbiddenAddress, GuardedTransport
from duragent.tools.web_html import html_to_markdown

__all__ = ["BRAVE_SEARCH_URL", "WebTool", "html_to_markdown"]

BRAVE_SEARCH_URL = "https://api.search.brave.com/res/v1/web/search"
USER_AGENT = "duragent-web-tool/1 (+https://github.com/giosakti/duragent)"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
    }
)


def _is_text(media_type: str) -> bool:
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n % (1024 * 1024) == 0 else f"{n // 1024} KB"


def _cut_utf8(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


class WebTool:
    """Fetches pages and searches the web for the model.

    Args:
        timeout: seconds a whole fetch (connect, redirects, body) or search may take.
        max_body: bytes of a response body read at most; the rest is never downloaded.
        max_output: UTF-8 bytes of text handed to the model.
        max_redirects: redirects followed before giving up.
        search_url: the Brave Search endpoint (tests point it at a local server).
        allow_private: ``allow_private`` entries of ``agent.yaml`` (``127.0.0.1:3000``,
            ``10.0.0.0/8``, ``wiki.internal``) that fetch may reach although not public.
    """

    name: str = "web"
    policy_type: PolicyType = "builtin"

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_body: int = 1024 * 1024,
        max_output: int = 50 * 1024,
        max_redirects: int = 5,
        search_url: str = BRAVE_SEARCH_URL,
        allow_private: Sequence[str | AllowRule] = (),
    ) -> None:
        self.timeout = timeout
        self.max_body = max_body
        self.max_output = max_output
        self.max_redirects = max_redirects
        self.search_url = search_url
        self.allow_private = tuple(
            r if isinstance(r, AllowRule) else parse_allow_rule(r) for r in allow_private
        )

    def definition(self) -> ToolDefinition:
        """``action`` fetch/search with ``url`` or ``query``/``count``."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Access the web. action=fetch reads an http(s) `url` and returns it as Markdown "
                "(at most 50 KB). action=search runs a Brave web search for `query` and returns "
                "`count` results (1-20, default 5); it needs BRAVE_API_KEY."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["fetch", "search"]},
                    "url": {"type": "string", "description": "http or https URL (fetch)."},
                    "query": {"type": "string", "description": "Search terms (search)."},
                    "count": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 20,
                        "description": "Number of search results (default 5).",
                    },
                },
                "required": ["action"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``web:fetch`` or ``web:search``."""
        return builtin_invocation(self.name, args)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Dispatch on ``action``; every failure is an unsuccessful outcome naming the cause."""
        action = (str_arg(args, "action") or "").strip().lower()
        if action == "fetch":
            url = str_arg(args, "url")
            if url is None:
                return ToolOutcome(False, "web fetch needs a `url` argument")
            return await self.fetch(url.strip())
        if action == "search":
            query = str_arg(args, "query")
            if query is None:
                return ToolOutcome(False, "web search needs a `query` argument")
            count = int_arg(args, "count", default=5, low=1, high=20)
            return await self.search(query, count, ctx.env.get("BRAVE_API_KEY", ""))
        return ToolOutcome(False, f"unknown web action {action!r}; use 'fetch' or 'search'")

    # -- fetch -------------------------------------------------------------------------------

    async def fetch(self, url: str) -> ToolOutcome:
        """Fetch ``url`` (http/https only) within the time, size and redirect limits."""
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            shown = f"{parts.scheme}:" if parts.scheme else "no scheme"
            return ToolOutcome(
                False, f"web fetch only supports http:// and https:// URLs (got {shown}): {url}"
            )
        try:
            async with asyncio.timeout(self.timeout):
                async with (
                    httpx.AsyncClient(
                        follow_redirects=True,
                        max_redirects=self.max_redirects,
                        timeout=self.timeout,
                        headers={"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING},
                        transport=GuardedTransport(self.allow_private),
                    ) as client,
                    client.stream("GET", url) as response,
                ):
                    return await self._read(response)
        except (TimeoutError, httpx.TimeoutException):
            return ToolOutcome(False, f"Fetching {url} timed out after {self.timeout:g} s")
        except ForbiddenAddress as exc:
            return ToolOutcome(False, f"Fetching {url} refused: {exc}")
        except httpx.TooManyRedirects:
            return ToolOutcome(
                False, f"Fetching {url} failed: more than {self.max_redirects} redirects"
            )
        except httpx.UnsupportedProtocol as exc:
            return ToolOutcome(
                False, f"Fetching {url} failed: redirected to a non-http URL ({exc})"
            )
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return ToolOutcome(False, f"Fetching {url} failed: {type(exc).__name__}: {exc}")

    async def _read(self, response: httpx.Response) -> ToolOutcome:
        final_url = str(response.url)
        if response.status_code >= 400:
            return ToolOutcome(
                False, f"HTTP {response.status_code} {response.reason_phrase} from {final_url}"
            )
        content_type = response.headers.get("content-type", "")
        media_type = content_type.split(";", 1)[0].strip().lower()
        if media_type and not _is_text(media_type):
            return ToolOutcome(
                False,
                f"{final_url} is {media_type} content, which web fetch cannot show as text",
            )
        try:
            read = await read_body(response, self.max_body)
        except BodyError as exc:
            return ToolOutcome(False, f"{final_url} cannot be read: {exc}")
        body, body_cut = read.data, read.cut
        if not media_type and b"\x00" in body[:4096]:
            return ToolOutcome(False, f"{final_url} looks binary; web fetch shows only text")
        try:
            text = body.decode(response.charset_encoding or "utf-8", errors="replace")
        except LookupError:  # an unknown charset name in the header
            text = body.decode("utf-8", errors="replace")
        if media_type in _HTML_TYPES or (
            not media_type and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
        ):
            text = await asyncio.to_thread(html_to_markdown, text)
        text, output_cut = _cut_utf8(text, self.max_output)
        notes = []
        if body_cut:
            notes.append(f"[page larger than {_size(self.max_body)}; only the start was read]")
        if output_cut:
            notes.append(f"[content truncated at {_size(self.max_output)}]")
        footer = "\n\n" + "\n".join(notes) if notes else ""
        return ToolOutcome(True, f"URL: {final_url}\n\n{text}{footer}")

    # -- search ------------------------------------------------------------------------------

    async def search(self, query: str, count: int, api_key: str) -> ToolOutcome:
        """Ask Brave Search for ``count`` web results for ``query``."""
        if not api_key:
            return ToolOutcome(
                False,
                "web search needs a Brave Search API key: set BRAVE_API_KEY in the "
                "environment of the workspace (web fetch works without it)",
            )
        try:
            async with (
                asyncio.timeout(self.timeout),
                httpx.AsyncClient(timeout=self.timeout) as client,
                client.stream(
                    "GET",
                    self.search_url,
                    params={"q": query, "count": count},
                    headers={
                        "Accept": "application/json",
                        "Accept-Encoding": ACCEPT_ENCODING,
                        "X-Subscription-Token": api_key,
                    },
                ) as response,
            ):
                if response.status_code >= 400:
                    return ToolOutcome(
                        False,
                        f"web search failed: HTTP {response.status_code} {response.reason_phrase}",
                    )
                read = await read_body(response, self.max_body)
        except (TimeoutError, httpx.TimeoutException):
            return ToolOutcome(False, f"web search timed out after {self.timeout:g} s")
        except BodyError as exc:
            return ToolOutcome(False, f"web search failed: {exc}")
        except httpx.HTTPError as exc:
            return ToolOutcome(False, f"web search failed: {type(exc).__name__}: {exc}")
        if read.cut:
            return ToolOutcome(
                False, f"web search failed: the answer was larger than {_size(self.max_body)}"
            )
        try:
            data = json.loads(read.data)
        except ValueError:
            return ToolOutcome(False, "web search failed: the answer was not JSON")
        # On a thread: descriptions go through html_to_markdown, which is CPU-bound.
        return ToolOutcome(True, await asyncio.to_thread(_format_results, query, data, count))


def _format_results(query: str, data: Any, count: int) -> str:
    web = data.get("web") if isinstance(data, dict) else None
    results = web.get("results") if isinstance(web, dict) else None
    if not isinstance(results, list) or not results:
        return f"No results for {query!r}"
    lines = [f"Search results for {query!r}:"]
    for i, item in enumerate(results[:count], start=1):
        if not isinstance(item, dict):
            continue
        title = str(item.get("title") or item.get("url") or "(untitled)")
        lines.append(f"\n{i}. {title}\n   {item.get('url', '')}")
        description = item.get("description")
        if description:
            lines.append(f"   {html_to_markdown(str(description))}")
    return "\n".join(lines)
