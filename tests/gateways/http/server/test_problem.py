"""Every error status the server can answer has a registered problem type.

Three handlers once answered 502 while the table had no 502 entry, so the answers went out
typed ``internal-error``. The walk below reads the HTTP package's source for every status
it raises or answers, so a new one without a type fails here, and ``problem()`` /
``ProblemError`` refuse an unregistered status where it is written.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest

import duragent.gateways.http as http_package
from duragent.gateways.http.openapi.document import openapi_document
from duragent.gateways.http.server.problem import (
    PROBLEM_TYPES,
    ProblemError,
    UnregisteredProblemError,
    problem,
)
from tests.gateways.http.api_fixtures import served

_STATUS_CALLS = {"ProblemError", "problem", "_problem_response", "HTTPException"}


def _statuses(node: ast.expr) -> set[int]:
    """The literal statuses an argument can be (``507 if full else 503`` is both)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _statuses(node.body) | _statuses(node.orelse)
    return set()


def statuses_in_source() -> dict[int, list[str]]:
    """Status → where: first arguments of the calls that answer one, values assigned to a
    ``status`` variable, and ``request_problem``'s ``return status, detail`` tuples."""
    found: dict[int, list[str]] = {}
    root = Path(http_package.__file__).parent
    for path in sorted(root.rglob("*.py")):  # every subpackage: server/, api/, openai/…
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            codes: set[int] = set()
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in _STATUS_CALLS:
                    codes = _statuses(node.args[0])
            elif isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "status" for target in node.targets
            ):  # status = 403 if admin else 401, raised a few lines on
                codes = _statuses(node.value)
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
                first = node.value.elts[0] if node.value.elts else None
                codes = _statuses(first) if first is not None else set()
            for code in codes:
                if code >= 400:
                    line = getattr(node, "lineno", 0)
                    found.setdefault(code, []).append(f"{path.relative_to(root)}:{line}")
    return found


def test_the_walk_finds_the_statuses_the_handlers_answer() -> None:
    found = statuses_in_source()
    # the walk must see real raises, else it would pass by finding nothing
    assert {400, 401, 403, 404, 408, 409, 413, 415, 500, 502, 503, 507} <= set(found)


def test_every_status_the_handlers_answer_has_a_problem_type() -> None:
    found = statuses_in_source()
    missing = {code: where for code, where in found.items() if code not in PROBLEM_TYPES}
    assert missing == {}


def test_every_error_status_in_the_openapi_document_has_a_problem_type() -> None:
    doc = openapi_document("test")
    documented = {
        int(code)
        for path in doc["paths"].values()
        for operation in path.values()
        for code in operation["responses"]
        if int(code) >= 400
    }
    assert documented - set(PROBLEM_TYPES) == set()
    problem_schema = doc["components"]["schemas"]["Problem"]["properties"]["type"]
    assert "urn:duragent:problem:bad-gateway" in problem_schema["enum"]
    assert "502 `urn:duragent:problem:bad-gateway` (Bad Gateway)" in problem_schema["description"]


def test_problem_types_are_distinct_urns_with_titles() -> None:
    urns = [kind.urn for kind in PROBLEM_TYPES.values()]
    assert len(set(urns)) == len(urns)
    assert all(kind.title and kind.meaning for kind in PROBLEM_TYPES.values())


def test_a_502_is_typed_bad_gateway_not_internal_error() -> None:
    response = problem(502, "the model said 401")
    assert b'"type":"urn:duragent:problem:bad-gateway"' in response.body
    assert b'"title":"Bad Gateway"' in response.body


@pytest.mark.parametrize("status", [418, 501, 599])
def test_an_unregistered_status_is_refused_where_it_is_raised(status: int) -> None:
    with pytest.raises(UnregisteredProblemError, match=f"HTTP {status} has no problem type"):
        ProblemError(status, "x")
    with pytest.raises(UnregisteredProblemError, match="PROBLEM_TYPES"):
        problem(status)


async def test_a_request_the_server_cannot_parse_gets_a_problem_not_plain_text(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        reader, writer = await asyncio.open_connection("127.0.0.1", s.runtime.http_port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n")
        await writer.drain()
        answer = await reader.read()  # the server closes after answering
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/problem+json" in head.lower()
    problem_body = json.loads(body)
    assert problem_body["type"] == "urn:duragent:problem:bad-request"
    assert problem_body["detail"].startswith("malformed HTTP request")
