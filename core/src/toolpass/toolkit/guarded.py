"""``guarded``: the permission check in front of one function, on the same pipeline as every
other entry point."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from toolpass.outcome.errors import ToolRefused
from toolpass.toolkit.authorize import PermissionCheck, PermissionEngine
from toolpass.toolkit.session import current_session, session_for
from toolpass.toolkit.toolkit import Toolkit, _secure, default_toolkit
from toolpass.wire.decision import Decision, Verdict
from toolpass.wire.errors import PermissionDenied

UserSource = str | Callable[[], str] | ContextVar[str] | ContextVar[str | None]


def guarded(
    tp: PermissionEngine,
    connection: str,
    action: str,
    resource: str,
    *,
    user: UserSource,
    fresh: bool = False,
    deny: str | None = None,
    toolkit: Toolkit | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Check ``action`` on ``resource`` for ``user`` before every call of the function.

    ``resource`` is a template such as ``"issue:{key}"`` filled from the call's arguments, as
    safely as ``permission_check`` does. The user comes from ``user=`` only (a string, a
    zero-argument callable or a ContextVar), never from the call. Anything but allow raises
    ``PermissionDenied`` before the body runs, or, with ``deny="message"``, returns that
    message instead. Each call is audited by ``toolkit`` (the default toolkit if not given).
    """
    check = PermissionCheck(tp, connection, action, resource, fresh=fresh)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        secured = _secure(
            fn, toolkit or default_toolkit, effect=None, authorize=check, on_refuse=None
        )

        def refuse(refused: ToolRefused) -> Any:
            if deny is not None:
                return deny
            verdict: Verdict = "deny" if refused.code == "not_authorized" else "unknown"
            reason = refused.detail or refused.message
            decision = Decision(verdict, reason, connection=connection, action=action)
            raise PermissionDenied(decision) from None

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                try:
                    with _session(user):
                        return await secured(*args, **kwargs)
                except ToolRefused as refused:
                    return refuse(refused)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                with _session(user):
                    return secured(*args, **kwargs)
            except ToolRefused as refused:
                return refuse(refused)

        return wrapper

    return decorate


@contextmanager
def _session(source: UserSource) -> Iterator[None]:
    """The call runs for the user ``source`` names: in the active session if it is theirs."""
    try:
        if isinstance(source, str):
            who: object = source
        elif isinstance(source, ContextVar):
            who = source.get()
        else:
            who = source()
    except LookupError:
        who = None
    except Exception as exc:
        raise ToolRefused(
            "no_session",
            "No user is known for this call.",
            detail=f"the user could not be told ({type(exc).__name__}: {exc})",
        )
    if not isinstance(who, str) or not who:
        raise ToolRefused(
            "no_session", "No user is known for this call.", detail="no user is set for this call"
        )
    active = current_session()
    if active is not None and active.user == who:
        yield
        return
    with session_for(who).active():
        yield
