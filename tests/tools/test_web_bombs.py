"""Compressed bodies that expand enormously: the web tool reads only the capped start of them.

The fetch runs in a child process so its peak memory (``VmHWM``) is its own. The memory is
what the test asserts: the old stall came from one zlib call expanding the whole bomb (256 MiB
of zeros, a 256+ MiB object) on the event loop, so a bounded memory growth means no call
decoded more than the cap (``web_body.STEP`` per call), and the loop cannot have stalled on
it. A ticker records the longest gap the loop left it next to the gap of an ordinary 1 MiB
page; both are printed (``-s``) for the spec, not compared: a busy machine stretches gaps, not
memory (issue 34).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.tools.web import WebTool
from duragent.tools.web_html import html_to_markdown
from tests.tools.local_http import serving

ROOT = Path(__file__).resolve().parents[2]
ZEROS = 256  # MiB of zeros inside the bomb
MIB = 1024 * 1024


def _gzip(chunks: Iterator[bytes], wbits: int = 31) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(z.compress(c) for c in chunks) + z.flush()


INNER = _gzip(bytes(MIB) for _ in range(ZEROS))
BOMB = _gzip(iter([INNER]))  # gzip, gzip: ~1 KB on the wire, 256 MiB decoded


async def bomb(request: Request) -> Response:
    encoding = request.path_params["encoding"]
    body = {"gzip,gzip": BOMB, "gzip": INNER, "deflate": _gzip(iter([bytes(4 * MIB)]), 15)}
    return Response(
        body[encoding],
        media_type="text/plain",
        headers={"Content-Encoding": encoding.replace(",", ", ")},
    )


async def stacked(request: Request) -> Response:
    return Response(BOMB, media_type="text/plain", headers={"Content-Encoding": "gzip, br"})


async def layers(request: Request) -> Response:
    names = request.path_params["names"].split(",")
    body = b"plain"
    for name in names:
        if name == "gzip":
            body = _gzip(iter([body]))
    return Response(body, media_type="text/plain", headers={"Content-Encoding": ", ".join(names)})


async def plain(request: Request) -> Response:
    return Response(b"p" * MIB, media_type="text/plain")


APP = Starlette(
    routes=[
        Route("/bomb/{encoding}", bomb),
        Route("/stacked", stacked),
        Route("/layers/{names}", layers),
        Route("/plain", plain),
    ]
)


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with serving(APP) as found:
        yield found


CHILD = r"""
import asyncio, json, sys, time
from duragent.tools.web import WebTool
from duragent.tools.web_html import html_to_markdown

def hwm_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

async def measured(tool, url):
    gap = 0.0
    done = False
    async def ticker():
        nonlocal gap
        last = time.monotonic()
        while not done:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gap = max(gap, now - last)
            last = now
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    started = time.monotonic()
    outcome = await tool.fetch(url)
    elapsed = time.monotonic() - started
    done = True
    await task
    return outcome, gap, elapsed

async def main(base):
    tool = WebTool(allow_private=["127.0.0.1"])
    _, plain_gap, _ = await measured(tool, base + "/plain")
    before = hwm_kb()
    outcome, gap, elapsed = await measured(tool, base + "/bomb/gzip,gzip")
    print(json.dumps({
        "success": outcome.success, "content": outcome.content[-200:],
        "growth_mb": (hwm_kb() - before) / 1024, "gap": gap, "plain_gap": plain_gap,
        "elapsed": elapsed,
    }))

asyncio.run(main(sys.argv[1]))
"""


def test_a_gzip_gzip_bomb_is_read_to_the_cap_without_memory_growth_or_a_loop_stall(
    port: int,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    print(measured)  # the numbers behind the spec, visible with -s
    assert measured["success"], measured
    assert "only the start was read" in measured["content"]
    assert measured["growth_mb"] < 64, measured  # 256 MiB of zeros decoded would be 256+


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "gzip,gzip"])
async def test_every_layer_counts_decoded_bytes_against_the_body_cap(
    port: int, encoding: str
) -> None:
    tool = WebTool(allow_private=["127.0.0.1"], max_body=256 * 1024, max_output=10**9)
    outcome = await tool.fetch(f"http://127.0.0.1:{port}/bomb/{encoding}")
    assert outcome.success, outcome.content
    assert "[page larger than 256 KB; only the start was read]" in outcome.content
    text = outcome.content.split("\n\n", 1)[1].rsplit("\n\n", 1)[0]
    assert len(text.encode()) == 256 * 1024


async def test_a_compression_that_is_not_decoded_here_is_refused_by_name(port: int) -> None:
    outcome = await WebTool(allow_private=["127.0.0.1"]).fetch(f"http://127.0.0.1:{port}/stacked")
    assert not outcome.success
    assert "Content-Encoding br" in outcome.content


async def test_more_than_three_stacked_layers_are_refused(port: int) -> None:
    tool = WebTool(allow_private=["127.0.0.1"])
    outcome = await tool.fetch(f"http://127.0.0.1:{port}/layers/gzip,gzip,gzip,gzip")
    assert not outcome.success
    assert "stacks 4 content encodings" in outcome.content


async def test_a_junk_encoding_value_is_read_as_plain_bytes(port: int) -> None:
    outcome = await WebTool(allow_private=["127.0.0.1"]).fetch(
        f"http://127.0.0.1:{port}/layers/none"
    )
    assert outcome.success, outcome.content
    assert outcome.content.endswith("plain")


def test_a_page_of_endless_tags_is_converted_only_up_to_the_tag_limit() -> None:
    markdown = html_to_markdown("<p>start</p>" + "<a>x</a>" * 1000, max_tags=100)
    assert markdown.startswith("start")
    assert markdown.count("x") < 60
    assert markdown.endswith("[page has more than 100 tags; only the start was converted]")


def test_a_page_within_the_tag_limit_is_converted_whole() -> None:
    html = "<p>a</p>" * 50  # exactly 100 tags
    assert html_to_markdown(html, max_tags=100).count("a") == 50
    assert "only the start" not in html_to_markdown(html, max_tags=100)
