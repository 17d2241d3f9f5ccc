"""The web tool reaches only public addresses unless ``allow_private`` opens a local service.

127.0.0.1 is the only network here, so a real server on it plays both "the server's own API"
(which the default must refuse, however the address is spelt) and "a local service a user
opened" (which an allow-list entry must reach). Name resolution is faked only where a test
needs a name this machine cannot resolve: at the event loop's ``getaddrinfo``, the OS boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from duragent.agents.loader import load_agent
from duragent.core.net_rules import non_public_reason, parse_allow_rule
from duragent.errors import ConfigError
from duragent.tools.registry import build_tools
from duragent.tools.web import WebTool
from tests.tools.local_http import serving

hits: list[str] = []


async def secret(request: Request) -> Response:
    hits.append(request.url.path)
    return PlainTextResponse(f"another agent's conversation, Host={request.headers['host']}")


async def bounce(request: Request) -> Response:
    return RedirectResponse(request.query_params["to"], status_code=302)


APP = Starlette(routes=[Route("/secret", secret), Route("/bounce", bounce)])


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with serving(APP) as found:
        yield found


@pytest.fixture(scope="module")
def other_port() -> Iterator[int]:
    with serving(APP) as found:
        yield found


SPELLINGS = [
    "127.0.0.1",
    "localhost",
    "localhost.",
    "LOCALHOST",
    "0.0.0.0",
    "2130706433",  # decimal
    "0x7f.1",  # hex and short form
    "017700000001",  # octal
    "127.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::1]",
    "[::]",
]


@pytest.mark.parametrize("host", SPELLINGS)
async def test_every_spelling_of_this_machine_is_refused_by_default(port: int, host: str) -> None:
    hits.clear()
    outcome = await WebTool().fetch(f"http://{host}:{port}/secret")
    assert not outcome.success
    assert "refused" in outcome.content
    assert "allow_private" in outcome.content
    assert hits == []


@pytest.mark.parametrize(
    "address",
    [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # shared (CGNAT)
        "224.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",  # IPv4-compatible
        "64:ff9b::7f00:1",  # NAT64
        "2002:7f00:1::",  # 6to4
    ],
)
def test_non_public_addresses_are_named(address: str) -> None:
    assert non_public_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert non_public_reason(ipaddress.ip_address(address)) is None


async def test_a_redirect_to_a_loopback_address_is_refused_even_from_an_allowed_origin(
    port: int, other_port: int
) -> None:
    hits.clear()
    tool = WebTool(allow_private=[f"127.0.0.1:{port}"])
    target = f"http://127.0.0.1:{other_port}/secret"
    outcome = await tool.fetch(f"http://127.0.0.1:{port}/bounce?to={target}")
    assert not outcome.success
    assert "refused" in outcome.content
    assert hits == []


async def test_an_allow_list_entry_with_a_port_opens_that_port_only(
    port: int, other_port: int
) -> None:
    tool = WebTool(allow_private=[f"127.0.0.1:{port}"])
    assert (await tool.fetch(f"http://127.0.0.1:{port}/secret")).success
    assert not (await tool.fetch(f"http://127.0.0.1:{other_port}/secret")).success


async def test_a_host_name_entry_opens_that_name_and_keeps_it_in_the_host_header(
    port: int,
) -> None:
    outcome = await WebTool(allow_private=["localhost"]).fetch(f"http://localhost:{port}/secret")
    assert outcome.success, outcome.content
    assert f"Host=localhost:{port}" in outcome.content


async def test_a_name_resolving_to_a_private_address_is_refused_after_resolution(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()

    async def resolve(host: str, p: int, **kwargs: Any) -> list[Any]:
        assert host == "intranet.example"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", p))]

    monkeypatch.setattr(loop, "getaddrinfo", resolve)
    hits.clear()
    outcome = await WebTool().fetch(f"http://intranet.example:{port}/secret")
    assert not outcome.success
    assert "intranet.example resolves to 127.0.0.1, a loopback address" in outcome.content
    assert hits == []


async def test_the_connection_goes_to_the_address_that_was_checked(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: a name answers public for the check, loopback a moment later."""
    loop = asyncio.get_running_loop()
    answers = ["192.88.99.1", "127.0.0.1"]  # public (never reachable here), then loopback
    calls: list[str] = []

    async def resolve(host: str | bytes, p: int, **kwargs: Any) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else host  # anyio passes IDNA bytes
        calls.append(name)
        address = answers[min(len(calls), len(answers)) - 1] if name == "rebind.example" else name
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, p))]

    monkeypatch.setattr(loop, "getaddrinfo", resolve)
    hits.clear()
    outcome = await WebTool(timeout=2).fetch(f"http://rebind.example:{port}/secret")
    assert not outcome.success
    assert hits == []
    assert calls.count("rebind.example") == 1


@pytest.mark.parametrize(
    "entry", ["", "http://x", "10.0.0.0/33", "1.2.3.4:99999", "[::1", "[::1]x", "a b", "h:0"]
)
def test_a_malformed_allow_list_entry_is_an_error_naming_it(entry: str) -> None:
    with pytest.raises(ValueError, match=r"port|address|IPv6"):
        parse_allow_rule(entry)


AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: assistant
spec:
  model:
    provider: offline
    name: duragent-offline
  tools:
"""


def test_agent_yaml_allow_private_reaches_the_web_tool(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        AGENT
        + "    - {type: builtin, name: web, allow_private: ['127.0.0.1:3000'], "
        + "max_body_bytes: 4096}\n"
    )
    tool = build_tools(load_agent(tmp_path), workspace_dir=tmp_path, world_memory_dir=tmp_path)[
        "web"
    ]
    assert isinstance(tool, WebTool)
    assert [rule.text for rule in tool.allow_private] == ["127.0.0.1:3000"]
    assert tool.max_body == 4096


@pytest.mark.parametrize(
    "entry",
    [
        "{type: builtin, name: web, allow_private: ['localhost:http']}",
        "{type: builtin, name: bash, allow_private: ['127.0.0.1']}",
        "{type: builtin, name: web, max_body_bytes: 0}",
    ],
)
def test_a_bad_web_option_in_agent_yaml_is_a_config_error(tmp_path: Path, entry: str) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT + f"    - {entry}\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(tmp_path)
    assert "spec.tools" in str(caught.value)


async def test_an_address_of_this_machine_is_refused_even_when_it_counts_as_public(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's public address is in no private range; the socket shows it is our own."""
    monkeypatch.setattr("duragent.tools.web_guard.non_public_reason", lambda address: None)
    hits.clear()
    outcome = await WebTool().fetch(f"http://127.0.0.1:{port}/secret")
    assert not outcome.success
    assert "an address of this machine" in outcome.content


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A key and a self-signed certificate for ``localhost``, made by the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    command = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    subprocess.run(
        [*command, "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"],
        check=True,
        capture_output=True,
    )
    return key, cert


async def test_tls_names_the_url_host_while_connecting_to_the_checked_address(
    self_signed: tuple[Path, Path],
) -> None:
    """SNI carries the URL's name (the connection itself went to the resolved address)."""
    key, cert = self_signed
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda conn, name, ctx: names.append(name)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def accept_one() -> None:
        conn, _ = listener.accept()
        with conn, contextlib.suppress(OSError):
            context.wrap_socket(conn, server_side=True).close()

    thread = threading.Thread(target=accept_one, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    outcome = await WebTool(allow_private=["localhost"]).fetch(f"https://localhost:{port}/")
    thread.join(10)
    listener.close()
    assert not outcome.success
    assert "CERTIFICATE_VERIFY_FAILED" in outcome.content  # self-signed: checked for the name
    assert names == ["localhost"]
