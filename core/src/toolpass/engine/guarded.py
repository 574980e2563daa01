"""``guarded``: the permission check in front of one function, sync or async."""

from __future__ import annotations

import functools
import inspect
import unicodedata
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from string import Formatter
from typing import Any, ParamSpec, Protocol, TypeVar, overload

from toolpass.engine.checker import Checker
from toolpass.engine.decision import Decision
from toolpass.engine.errors import PermissionDenied

P = ParamSpec("P")
R = TypeVar("R")
UserSource = str | Callable[[], str] | ContextVar[str] | ContextVar[str | None]


class Guard(Protocol):
    """A decorator that keeps the function's type."""

    def __call__(self, fn: Callable[P, R], /) -> Callable[P, R]: ...


class GuardWithMessage(Protocol):
    """A decorator whose function may return the refusal message instead."""

    @overload
    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, R]], /
    ) -> Callable[P, Coroutine[Any, Any, R | str]]: ...
    @overload
    def __call__(self, fn: Callable[P, R], /) -> Callable[P, R | str]: ...


@overload
def guarded(
    tp: Checker,
    connection: str,
    action: str,
    resource: str,
    *,
    user: UserSource,
    fresh: bool = False,
    deny: None = None,
) -> Guard: ...
@overload
def guarded(
    tp: Checker,
    connection: str,
    action: str,
    resource: str,
    *,
    user: UserSource,
    fresh: bool = False,
    deny: str,
) -> GuardWithMessage: ...
def guarded(
    tp: Checker,
    connection: str,
    action: str,
    resource: str,
    *,
    user: UserSource,
    fresh: bool = False,
    deny: str | None = None,
) -> Any:
    """Check ``action`` on ``resource`` for ``user`` before every call of the function.

    ``resource`` is a template such as ``"issue:{key}"`` filled from the call's arguments
    (str or int values without ``? # @``, ``..``, whitespace or control characters). The user
    comes from ``user=`` only (a string, a zero-argument callable or a ContextVar), never
    from the call. Anything but allow raises :class:`PermissionDenied` before the body runs,
    or, with ``deny="message"``, returns that message instead.
    """
    fields = _fields(resource)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn)
        missing = [f for f in fields if f not in signature.parameters]
        if missing:
            raise TypeError(f"{fn.__qualname__} has no argument {missing[0]!r} for {resource!r}")

        def question(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str] | Decision:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            who = _user(user)
            if not who.startswith("user:"):
                return Decision.unknown(who, connection=connection, action=action)
            who = who[5:]
            values = {f: bound.arguments[f] for f in fields}
            bad = next((f for f, v in values.items() if not _safe(v)), None)
            if bad is not None:
                reason = f"argument {bad!r} cannot name a resource (unsafe characters or type)"
                return Decision.unknown(reason, user=who, connection=connection, action=action)
            return who, resource.format(**{f: str(v) for f, v in values.items()})

        def refuse(decision: Decision) -> str:
            if deny is None:
                raise PermissionDenied(decision)
            return deny

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                asked = question(args, kwargs)
                if isinstance(asked, Decision):
                    return refuse(asked)
                decision = await tp.acheck(asked[0], connection, action, asked[1], fresh=fresh)
                if not decision.allowed:
                    return refuse(decision)
                return await fn(*args, **kwargs)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            asked = question(args, kwargs)
            if isinstance(asked, Decision):
                return refuse(asked)
            decision = tp.check(asked[0], connection, action, asked[1], fresh=fresh)
            if not decision.allowed:
                return refuse(decision)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def _fields(template: str) -> list[str]:
    problem = ValueError(f"resource template {template!r}: use plain {{name}} fields only")
    try:
        parsed = list(Formatter().parse(template))
    except ValueError:
        raise problem from None
    fields = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise problem
        fields.append(name)
    return fields


def _user(source: UserSource) -> str:
    """``"user:<name>"``, or why there is none."""
    try:
        value = (
            source
            if isinstance(source, str)
            else (source.get() if isinstance(source, ContextVar) else source())
        )
    except LookupError:
        return "no user is set for this call"
    except Exception as e:
        return f"the user could not be told ({type(e).__name__}: {e})"
    if not isinstance(value, str) or not value:
        return "no user is set for this call"
    return f"user:{value}"


def _safe(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return False
    text = str(value)
    return (
        bool(text)
        and ".." not in text
        and not any(c in "?#@" or c.isspace() or unicodedata.category(c)[0] == "C" for c in text)
    )
