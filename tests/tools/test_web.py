"""The web tool against a real HTTP server on 127.0.0.1: conversion, limits, redirects, search."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from duragent.core.caller import OPERATOR
from duragent.tools.base import ToolContext
from duragent.tools.web import WebTool, html_to_markdown

PAGE = """<!doctype html>
<html><head><title>Kettles</title><style>.a { color: red }</style></head>
<body>
<h1>All about kettles</h1>
<script>alert("tracking")</script>
<p>Boil <b>water</b> with a <a href="/shop">kettle</a>.</p>
<ul><li>electric</li><li>stovetop</li></ul>
</body></html>"""

LOCAL = ["127.0.0.1"]
"""The allow-list entry that lets the tool reach the test server: loopback is refused by default."""

search_requests: list[Request] = []


async def page(request: Request) -> Response:
    return Response(PAGE, media_type="text/html; charset=utf-8")


async def plain(request: Request) -> Response:
    return Response("just text, <not> html", media_type="text/plain")


async def image(request: Request) -> Response:
    return Response(b"\x89PNG\r\n\x1a\n" + bytes(100), media_type="image/png")


async def missing(request: Request) -> Response:
    return Response("nope", status_code=404)


async def huge(request: Request) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10 * 16):  # 10 MiB in 64 KiB chunks
            yield b"y" * 65536

    return StreamingResponse(chunks(), media_type="text/plain")


async def slow(request: Request) -> StreamingResponse:
    async def trickle() -> AsyncIterator[bytes]:
        for _ in range(12_000):  # one byte every 50 ms for 600 s, unless the client leaves
            yield b"."
            await asyncio.sleep(0.05)

    return StreamingResponse(trickle(), media_type="text/plain")


async def redirect(request: Request) -> Response:
    hops = int(request.path_params["hops"])
    target = "/page" if hops == 0 else f"/redirect/{hops - 1}"
    return RedirectResponse(target, status_code=302)


async def to_file(request: Request) -> Response:
    return RedirectResponse("file:///etc/passwd", status_code=302)


async def brave(request: Request) -> Response:
    search_requests.append(request)
    return JSONResponse(
        {
            "web": {
                "results": [
                    {"title": "Kettle", "url": "https://k.example", "description": "A <strong>pot"},
                    {"title": "Tea", "url": "https://t.example", "description": "Leaves"},
                ]
            }
        }
    )


APP = Starlette(
    routes=[
        Route("/page", page),
        Route("/plain", plain),
        Route("/image", image),
        Route("/missing", missing),
        Route("/huge", huge),
        Route("/slow", slow),
        Route("/redirect/{hops}", redirect),
        Route("/to-file", to_file),
        Route("/brave", brave),
    ]
)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The app served by uvicorn on its own loop in a thread, once for the whole module."""
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(
        APP, lifespan="off", log_config=None, access_log=False, timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="assistant",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
        env={"BRAVE_API_KEY": "secret-key"},
    )


async def test_an_html_page_comes_back_as_markdown_without_scripts_or_styles(
    base_url: str, ctx: ToolContext
) -> None:
    outcome = await WebTool(allow_private=LOCAL).run(
        {"action": "fetch", "url": f"{base_url}/page"}, ctx
    )
    assert outcome.success, outcome.content
    assert outcome.content.startswith(f"URL: {base_url}/page\n\n")
    assert "# All about kettles" in outcome.content
    assert "Boil **water** with a [kettle](/shop)." in outcome.content
    assert "- electric" in outcome.content
    assert "alert" not in outcome.content
    assert "color" not in outcome.content


async def test_plain_text_is_returned_as_it_is(base_url: str, ctx: ToolContext) -> None:
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/plain")
    assert outcome.success
    assert outcome.content.endswith("just text, <not> html")


async def test_binary_content_is_refused_with_its_type(base_url: str) -> None:
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/image")
    assert not outcome.success
    assert "image/png" in outcome.content


async def test_an_http_error_status_is_an_unsuccessful_outcome(base_url: str) -> None:
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/missing")
    assert not outcome.success
    assert "HTTP 404" in outcome.content


async def test_a_huge_body_stops_at_the_body_cap_and_the_output_at_the_output_cap(
    base_url: str,
) -> None:
    started = time.monotonic()
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/huge")
    assert time.monotonic() - started < 60
    assert outcome.success
    assert "[page larger than 1 MB; only the start was read]" in outcome.content
    assert "[content truncated at 50 KB]" in outcome.content
    assert "y" * (50 * 1024) in outcome.content
    assert "y" * (50 * 1024 + 1) not in outcome.content
    assert len(outcome.content.encode()) < 51 * 1024


async def test_a_trickling_server_is_cut_off_by_the_overall_timeout(base_url: str) -> None:
    started = time.monotonic()
    outcome = await WebTool(timeout=0.3, allow_private=LOCAL).fetch(f"{base_url}/slow")
    assert time.monotonic() - started < 60  # the server trickles for 600 s
    assert not outcome.success
    assert "timed out after 0.3 s" in outcome.content


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "example.com"]
)
async def test_only_http_and_https_urls_are_fetched(url: str, ctx: ToolContext) -> None:
    outcome = await WebTool(allow_private=LOCAL).run({"action": "fetch", "url": url}, ctx)
    assert not outcome.success
    assert "only supports http:// and https://" in outcome.content


async def test_up_to_five_redirects_are_followed(base_url: str) -> None:
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/redirect/4")
    assert outcome.success, outcome.content
    assert outcome.content.startswith(f"URL: {base_url}/page\n\n")


async def test_a_sixth_redirect_is_refused(base_url: str) -> None:
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/redirect/5")
    assert not outcome.success
    assert "more than 5 redirects" in outcome.content


async def test_a_redirect_to_a_file_url_is_refused(base_url: str) -> None:
    outcome = await WebTool(allow_private=LOCAL).fetch(f"{base_url}/to-file")
    assert not outcome.success
    assert "non-http" in outcome.content


async def test_search_without_a_brave_key_explains_what_is_missing(tmp_path: Path) -> None:
    ctx = ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="a",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
    )
    outcome = await WebTool().run({"action": "search", "query": "kettles"}, ctx)
    assert not outcome.success
    assert "BRAVE_API_KEY" in outcome.content


async def test_search_sends_the_key_and_lists_the_results(base_url: str, ctx: ToolContext) -> None:
    tool = WebTool(search_url=f"{base_url}/brave")
    outcome = await tool.run({"action": "search", "query": "kettles", "count": "1"}, ctx)
    assert outcome.success, outcome.content
    assert "1. Kettle\n   https://k.example\n   A **pot**" in outcome.content
    assert "Tea" not in outcome.content
    request = search_requests[-1]
    assert request.headers["x-subscription-token"] == "secret-key"
    assert request.query_params["q"] == "kettles"
    assert request.query_params["count"] == "1"


async def test_the_policy_string_names_the_action(ctx: ToolContext) -> None:
    tool = WebTool()
    assert tool.invocation({"action": "fetch", "url": "https://x"}) == "web:fetch"
    assert tool.invocation({}) == "web"
    outcome = await tool.run({"action": "crawl"}, ctx)
    assert not outcome.success
    assert "unknown web action" in outcome.content


def test_deeply_nested_html_falls_back_to_plain_text() -> None:
    html = "<div>" * 5000 + "deep" + "</div>" * 5000
    assert html_to_markdown(html) == "deep"
