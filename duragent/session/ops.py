"""The actor boundary: an operation of a session actor as a typed value.

A request to a session's actor carries the operation itself, an ``Op``: the actor's method,
made one by the ``@op(...)`` decorator, with what the registry must know about it declared
on the method (is it safe to retry, may it end the session). There are no operation names to
look up: ``SessionRegistry.call(sid, SessionOps.add_user_message, content="hi")`` is typed
with the method's own parameters and result (``ParamSpec``), so mypy rejects an operation
that is not the actor's, a misspelt or missing argument, a wrong type, or a wrong result; the
actor runs ``op.fn(self, *args, **kwargs)``. An operation is written twice (the ``@op``
method in ``operations``, the typed method on ``SessionHandle``), and mypy ties the two.

On an instance an ``Op`` is an ordinary bound method (``self.set_status(...)`` inside the
actor); on its class it is the ``Op`` (``SessionOps.set_status``), which is what crosses.

**Retry safety** (``retry_safe``): out of open files (``EMFILE``), the registry evicts idle
actors and tries the request again (``eviction.Evictor.making_room``), but only a request
that, failing for want of a descriptor, recorded nothing: a durable write is withdrawn when
it fails, batched writes keep their events queued, an idempotent write may be repeated, a
read changes nothing. An operation that writes an event *then* a snapshot (the approvals)
could record its event twice: it is not retried. Each operation says why beside its
decorator.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

__all__ = ["Op", "op", "ops_of"]

S = TypeVar("S", contravariant=True)
"""The actor class an operation runs on (an op of a base class runs on its subclasses)."""
P = ParamSpec("P")
R = TypeVar("R", covariant=True)

_S = TypeVar("_S")
_P = ParamSpec("_P")
_R = TypeVar("_R")


class Op(Generic[S, P, R]):
    """One operation of a session actor: its function and what the registry must know.

    A plain slotted class, built once per operation at import; nothing is allocated per call.
    """

    __slots__ = ("ends_session", "fn", "name", "read_only", "retry_safe")

    def __init__(
        self,
        fn: Callable[Concatenate[S, P], R],
        *,
        retry_safe: bool,
        ends_session: bool,
        read_only: bool = False,
    ) -> None:
        self.fn = fn
        """The method's function: the actor runs ``fn(self, *args, **kwargs)``."""
        self.name: str = fn.__name__
        """For logs and errors only: nothing is looked up by it."""
        self.retry_safe = retry_safe
        """Tried again after making room for descriptors (see module docstring)."""
        self.ends_session = ends_session
        """It may complete the session (the registry stops taking it as usable)."""
        self.read_only = read_only
        """It changes nothing: the session's write count (``SessionRegistry.writes``) stays."""

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(self, instance: object, owner: type[Any] | None = None) -> Self | Callable[P, R]:
        """On the class, the ``Op``; on an actor, its bound method."""
        if instance is None:
            return self
        bound: Callable[P, R] = types.MethodType(self.fn, instance)
        return bound

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def op(
    *, retry_safe: bool, ends_session: bool = False, read_only: bool = False
) -> Callable[[Callable[Concatenate[_S, _P], _R]], Op[_S, _P, _R]]:
    """Make the decorated actor method an ``Op``; ``retry_safe`` must always be declared."""

    def make(fn: Callable[Concatenate[_S, _P], _R]) -> Op[_S, _P, _R]:
        return Op(fn, retry_safe=retry_safe, ends_session=ends_session, read_only=read_only)

    return make


def ops_of(cls: type) -> dict[str, Op[Any, ..., Any]]:
    """Every ``Op`` of ``cls`` and its bases, by attribute name (for tests and docs)."""
    found: dict[str, Op[Any, ..., Any]] = {}
    for klass in reversed(cls.__mro__):
        found.update((k, v) for k, v in vars(klass).items() if isinstance(v, Op))
    return found
