"""The actor boundary is typed: a request carries its ``Op``, which declares its retry safety.

Three checks: every operation of the actor is an ``Op`` with its retry safety declared and
every handle method forwards to one; no source in the session package names an operation
with a string or dispatches by a built name; and mypy rejects a wrong op, argument or result
(``_misuses_the_type_checker_rejects`` below, checked by ``tests/test_static_checks.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import duragent.session
from duragent.core.snapshot import SessionStatus
from duragent.session import SessionRegistry
from duragent.session.actor import SessionActor
from duragent.session.handle import SessionHandle
from duragent.session.operations import SessionOps
from duragent.session.ops import Op, ops_of

PACKAGE = Path(duragent.session.__file__).parent
ACTOR_OPS = ops_of(SessionActor)


def handle_forwards() -> dict[str, str]:
    """Each ``SessionHandle`` method → the ``SessionOps`` attribute it passes to ``call``."""
    tree = ast.parse((PACKAGE / "handle.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SessionHandle")
    forwards: dict[str, str] = {}
    for method in cls.body:
        if not isinstance(method, ast.AsyncFunctionDef):
            continue
        calls = [
            node
            for node in ast.walk(method)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "call"
        ]
        assert len(calls) == 1, f"SessionHandle.{method.name} should make one call"
        target = calls[0].args[1]
        assert isinstance(target, ast.Attribute), f"SessionHandle.{method.name}: {target}"
        assert isinstance(target.value, ast.Name)
        assert target.value.id == "SessionOps"
        forwards[method.name] = target.attr
    return forwards


def test_every_operation_of_the_actor_is_an_op_with_its_retry_safety_declared() -> None:
    assert len(ACTOR_OPS) >= 20
    for attr, op in ACTOR_OPS.items():
        assert isinstance(op, Op)
        assert op.name == attr
        assert isinstance(op.retry_safe, bool)
        assert isinstance(op.ends_session, bool)
        assert op.fn.__doc__, f"{attr} says what it does"
    assert not [a for a in vars(SessionActor) if a.startswith("op_")]
    assert not [a for a in vars(SessionOps) if a.startswith("op_")]


def test_every_handle_method_forwards_to_an_op_and_every_op_is_used() -> None:
    forwards = handle_forwards()
    public = {n for n in vars(SessionHandle) if not n.startswith("_") and n != "session_id"}
    assert set(forwards) == public
    assert set(forwards.values()) <= set(ACTOR_OPS)
    by_the_registry_and_launcher = {"expire_if_idle", "close"}
    assert set(forwards.values()) | by_the_registry_and_launcher == set(ACTOR_OPS)


def test_only_writes_that_record_nothing_when_they_fail_and_reads_are_retried() -> None:
    retried = {op for op in ACTOR_OPS.values() if op.retry_safe}
    assert retried == {
        SessionOps.info,
        SessionOps.messages,
        SessionOps.paused_turn,
        SessionOps.events,
        SessionOps.flush,
        SessionOps.snapshot,
        SessionOps.set_status,
        SessionOps.expire_if_idle,
        SessionOps.add_user_message,
        SessionOps.turn_context,
        SessionOps.add_assistant_response,
        SessionOps.record_error,
        SessionOps.record_delivery,
        SessionOps.add_silent_message,
        SessionOps.recent_silent,
    }
    for writes_an_event_then_a_snapshot in (
        SessionOps.set_pending_approval,
        SessionOps.resolve_pending_approval,
        SessionOps.record_summary,
    ):
        assert not writes_an_event_then_a_snapshot.retry_safe
    ending = {op for op in ACTOR_OPS.values() if op.ends_session}
    assert ending == {SessionOps.set_status, SessionOps.expire_if_idle}


def test_an_op_is_the_bound_method_on_an_actor_and_itself_on_its_class() -> None:
    assert isinstance(SessionOps.info, Op)
    assert SessionActor.info is SessionOps.info
    assert SessionActor.close.fn.__name__ == "close"
    assert repr(SessionOps.info) == "<op info>"


def _sources() -> list[Path]:
    return sorted(PACKAGE.glob("*.py"))


def test_the_session_package_has_sources_to_check() -> None:
    names = {p.name for p in _sources()}
    assert {"registry.py", "actor.py", "handle.py", "launcher.py", "eviction.py"} <= names


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.name)
def test_no_operation_is_named_by_a_string_or_found_by_a_built_name(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        where = f"{path.name}:{node.lineno}"
        if name == "getattr":
            assert isinstance(node.args[1], ast.Constant), f"{where}: getattr by a built name"
        if name in ("call", "_call", "ask", "_ask", "Request", "tell"):
            named = [
                a
                for a in node.args
                if isinstance(a, ast.JoinedStr)
                or (isinstance(a, ast.Constant) and isinstance(a.value, str))
            ]
            assert not named, f"{where}: an operation named by a string"


async def _misuses_the_type_checker_rejects(registry: SessionRegistry, sid: str) -> None:
    """Never run: mypy checks it (``mypy tests``, strict about unused ``type: ignore``).

    Each line below is an error mypy must report; if one stopped being an error, its ignore
    comment would be unused and ``tests/test_static_checks.py`` would fail.
    """
    await registry.call(sid, "info")  # type: ignore[arg-type]
    await registry.call(sid, SessionOps.no_such_op)  # type: ignore[attr-defined]
    await registry.call(sid, SessionOps.add_user_message, contents="hi")  # type: ignore[call-arg]
    await registry.call(sid, SessionOps.add_user_message)  # type: ignore[call-arg]
    await registry.call(sid, SessionOps.set_status, status="done")  # type: ignore[arg-type]
    await registry.call(sid, SessionOps.info, 1)  # type: ignore[call-arg]
    wrong: int = await registry.call(sid, SessionOps.info)  # type: ignore[arg-type]
    await registry.call(sid, SessionOps.set_status, status=SessionStatus.ACTIVE)  # the right way
    del wrong
