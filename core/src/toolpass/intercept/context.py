"""Which tool call a request belongs to, and whose authority it is made on.

The pipeline opens a ``CallScope`` around a tool's body when the request hook is on. Requests
the body sends (also from threads it starts, see ``carry_context``) find it here.
``as_user()`` and ``as_agent()`` say, for the requests inside them, whether the user's
permission is checked; the innermost block decides, and a nested tool starts again from its
toolkit's ``act_as``.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolpass.intercept.call import CallKit, CallSession, DeclaredTool
    from toolpass.intercept.entitlements import ToolEntitlement
    from toolpass.outcome.audit import AuditEvent
    from toolpass.outcome.errors import ToolRefused


class CallScope:
    """One running tool call, as the request hook sees it."""

    __slots__ = (
        "act_as",
        "approved",
        "arguments",
        "effect",
        "ended",
        "entitled",
        "event",
        "kit",
        "read_elsewhere",
        "read_untrusted",
        "refused",
        "refused_requests",
        "session",
        "spec",
    )

    def __init__(
        self,
        spec: DeclaredTool,
        session: CallSession,
        kit: CallKit,
        event: AuditEvent,
        arguments: dict[str, Any],
        approved: bool,
    ) -> None:
        self.spec = spec
        self.session = session
        self.kit = kit
        self.event = event
        self.arguments = arguments
        self.act_as: str = kit.settings.act_as
        self.approved = approved  # a person approved this call sending data out
        self.refused: ToolRefused | None = None  # the first request refused: the call's outcome
        self.refused_requests: dict[tuple[str, str], ToolRefused] = {}  # by (method, url)
        self.read_untrusted = False  # a request read content from an untrusted source
        self.read_elsewhere = False  # a request went to a host no connection owns
        self.entitled: ToolEntitlement | None = None  # what the tool may do, when held to it
        self.effect: str | None = spec.effect  # declared, or the strongest recorded
        self.ended = False  # the call returned: a thread it started may still send requests


_scope: ContextVar[CallScope | None] = ContextVar("toolpass_call", default=None)
_acting: ContextVar[str | None] = ContextVar("toolpass_acting", default=None)
_active = 0
_active_lock = threading.Lock()


def current() -> CallScope | None:
    """The tool call whose body is running here, if any."""
    return _scope.get()


def acting(scope: CallScope) -> str:
    """``"user"`` or ``"agent"``: on whose authority requests are made here."""
    return _acting.get() or scope.act_as


def calls_running() -> bool:
    """True while any tool call's body runs (in any thread)."""
    return _active > 0


def enter(scope: CallScope) -> tuple[Token[CallScope | None], Token[str | None]]:
    global _active
    with _active_lock:
        _active += 1
    return _scope.set(scope), _acting.set(None)


def leave(tokens: tuple[Token[CallScope | None], Token[str | None]]) -> None:
    global _active
    scope = _scope.get()
    if scope is not None:
        scope.ended = True
    _acting.reset(tokens[1])
    _scope.reset(tokens[0])
    with _active_lock:
        _active -= 1


@contextmanager
def as_user() -> Iterator[None]:
    """Requests in this block are checked against the session's user."""
    token = _acting.set("user")
    try:
        yield
    finally:
        _acting.reset(token)


@contextmanager
def as_agent() -> Iterator[None]:
    """Requests in this block are made on the agent's own authority: the user's permission
    is not asked (scope, limits, untrusted-input and exfiltration checks still apply)."""
    token = _acting.set("agent")
    try:
        yield
    finally:
        _acting.reset(token)


# Threads a tool starts carry the call's context, the way OpenTelemetry's threading
# instrumentation carries its own: captured at Thread.start (so threading.Timer too) and at
# ThreadPoolExecutor.submit (so loop.run_in_executor, on an executor made before the call
# too; asyncio.to_thread copies the context itself). What cannot carry it: a process
# (ProcessPoolExecutor, multiprocessing: the child has no hook and no call), and a thread
# that existed before the call and is handed work some other way (a queue it reads).

_original_start = threading.Thread.start
_original_submit: Any = None  # ThreadPoolExecutor.submit, once the hook is first installed


def _start(self: threading.Thread) -> None:
    if _scope.get() is not None and not getattr(self, "_toolpass_context", None):
        ctx = contextvars.copy_context()
        run = self.run
        self._toolpass_context = ctx  # type: ignore[attr-defined]
        self.run = functools.partial(ctx.run, run)  # type: ignore[method-assign]
    _original_start(self)


def _submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    if _scope.get() is not None:
        fn = functools.partial(contextvars.copy_context().run, fn)
    return _original_submit(self, fn, *args, **kwargs)


def carry_context(on: bool = True) -> None:
    """Make (or stop making) new threads and executor tasks inherit the running call."""
    from concurrent.futures import ThreadPoolExecutor  # here: it loads logging and more

    global _original_submit
    if _original_submit is None:
        _original_submit = ThreadPoolExecutor.submit
    threading.Thread.start = _start if on else _original_start  # type: ignore[method-assign]
    ThreadPoolExecutor.submit = _submit if on else _original_submit  # type: ignore[method-assign]
