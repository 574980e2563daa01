"""One call, one audit event, however many layers check it.

Two layers may check one call of an agent: an adapter's call (a framework's tool) whose body
calls a ``secured_tool``, and a framework hook that only decides (``Guard.check``) before the
framework runs the body. Each layer runs the pipeline, and each would write an event; here
they write one, with the final outcome, whichever layer refused:

- a secured tool's call made by the body of an adapter's call *joins* it: its event is handed
  over, and the adapter's call writes both as one (``join``, ``write``);
- a hook's decision that lets the call run, when the adapter says its body follows in this
  context, is *held* (``hold``): the first pipeline its body runs (inside ``Guard.session``
  for the same user: ``claim``) takes it and writes it with its own; a body that ran none
  writes it as the body ends (``release``); one never taken is written when the next call is
  checked (or another call runs outside its body), or when nothing can take it any more.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from toolpass.outcome.audit import AuditEvent, emit
from toolpass.outcome.errors import ToolRefused
from toolpass.toolkit.checks import CallState
from toolpass.toolkit.settings import AuditSink

#: The adapter's call whose body (the framework's handler) runs now.
_adapting: ContextVar[CallState | None] = ContextVar("toolpass_adapting", default=None)
_lock = threading.Lock()


#: A decision held for its body (``CallState.waiting``), in this context and the body's.
_held: ContextVar[CallState | None] = ContextVar("toolpass_held", default=None)
#: Set by ``holding``: a decision made now is held for the body that follows.
_holding: ContextVar[bool] = ContextVar("toolpass_holding", default=False)
#: The held decision whose body runs now (``claim``): only a pipeline of that body takes it.
_body: ContextVar[CallState | None] = ContextVar("toolpass_body", default=None)


def _take(held: CallState) -> bool:
    """Whether this caller takes the held decision's event (only the first does)."""
    assert held.waiting is not None
    with _lock:
        if held.waiting[0]:
            return False
        held.waiting[0] = True
        return True


def _untaken(event: AuditEvent, sinks: tuple[AuditSink, ...], taken: list[bool]) -> None:
    """A held decision that nothing can take any more is written alone."""
    with _lock:
        if taken[0]:
            return
        taken[0] = True
    emit(event, sinks)


@contextmanager
def holding() -> Iterator[None]:
    """Decisions made inside are held for the body the framework runs next, in this context
    or one copied from it (``Guard.check(..., body_follows=True)``)."""
    token = _holding.set(True)
    try:
        yield
    finally:
        _holding.reset(token)


def claim(user: str | None) -> CallState | None:
    """The decision held here, now running its body for ``user`` (``Guard.session``); None
    when none is held or it was made for another user (then it is written alone)."""
    held = _held.get()
    if held is None or held.event.user != user:
        return None
    _body.set(held)
    return held


def release(held: CallState, failure: BaseException | None) -> None:
    """The body of ``held`` (a hook's decision) ended, having run no pipeline that took
    it: its event is written now, with the body's failure, if any."""
    if not _take(held):
        return
    event = held.event
    if isinstance(failure, ToolRefused):
        event.outcome, event.code, event.message = "refused", failure.code, failure.message
        event.detail = failure.detail or None
    elif failure is not None:
        event.outcome = "error" if isinstance(failure, Exception) else "cancelled"
        event.detail = f"{type(failure).__name__}: {failure}"
    emit(event, _sinks(held))


def held() -> CallState | None:
    """The decision held in this context for its body, if any (see ``carried``)."""
    return _held.get()


@contextmanager
def carried(decision: CallState | None) -> Iterator[None]:
    """``decision`` (from ``held``) held here, for a body run in another context than its
    hook's: a framework that runs the two in different tasks carries it across."""
    token = _held.set(decision)
    try:
        yield
    finally:
        _held.reset(token)


def adapting(c: CallState) -> object:
    """While an adapter's call runs its body: a token for ``adapted``."""
    return _adapting.set(c)


def adapted(token: object) -> None:
    _adapting.reset(token)  # type: ignore[arg-type]


def join(c: CallState, deciding: bool) -> None:
    """Join ``c`` to the call it is part of: the adapter's call whose body made it (when it
    is the first secured tool that body calls; a later one, or one called by the tool, is a
    call apart), or the decision held for the body it runs."""
    outer = _adapting.get()
    if outer is not None:
        if not c.spec.framework:
            with _lock:
                if outer.inner is None and not outer.ended:
                    outer.inner, c.outer = c, outer
        return
    held = _held.get()
    if held is None or not _take(held):
        return
    if deciding or _body.get() is not held:  # another call: the held one's body ran none
        emit(held.event, _sinks(held))
        return
    held.inner, c.outer = c, held


def write(c: CallState, deciding: bool) -> None:
    """Write the call's one event; a call that joined one still on hands it over instead,
    and a hook's decision made under ``holding`` waits for its body."""
    event = c.event
    event.finish()
    if event.secrets:
        event.seal()  # redacted now: the credential is forgotten before sinks keep it
    with _lock:
        c.ended = True
        outer = c.outer
        if outer is not None and not outer.ended:
            return  # handed over: the adapter's call is still on
        if outer is not None and outer.waiting is None:
            outer = None  # the adapter's call ended first and wrote its own event
        inner = c.inner if c.inner is not None and c.inner.ended else None
    sinks = c.kit.audit
    if inner is not None:
        event, sinks = _one_event(event, inner.event), _both(sinks, inner.kit.audit)
    if outer is not None:
        event, sinks = _one_event(outer.event, event), _both(_sinks(outer), sinks)
    if deciding and event.outcome == "ok" and _holding.get():
        _hold(c, event, sinks)
        return
    emit(event, sinks)


def _hold(c: CallState, event: AuditEvent, sinks: tuple[AuditSink, ...]) -> None:
    """Hold ``c``'s decision for its body; write one held before that no body took."""
    c.waiting = [False]
    weakref.finalize(c, _untaken, event, sinks, c.waiting)
    earlier = _held.get()
    _held.set(c)
    if earlier is not None and _take(earlier):  # its body never ran in a pipeline
        emit(earlier.event, _sinks(earlier))


def _sinks(c: CallState) -> tuple[AuditSink, ...]:
    return c.kit.audit


def _both(first: tuple[AuditSink, ...], then: tuple[AuditSink, ...]) -> tuple[AuditSink, ...]:
    return first + tuple(s for s in then if s not in first)


def _one_event(outer: AuditEvent, inner: AuditEvent) -> AuditEvent:
    """The one event of two layers' checks of a call: the inner one's (the secured tool's,
    under the name the application declared, or the body's: it knows the most), with what
    the outer layer found that the inner did not, and the final outcome: the outer's when
    the inner's call ended well."""
    if inner.outcome == "ok" and outer.outcome != "ok":
        inner.outcome, inner.code = outer.outcome, outer.code
        inner.message, inner.detail = outer.message, outer.detail
    if outer.time > inner.time:  # the outer call ended last: it took the whole time
        inner.time, inner.duration = outer.time, outer.duration
    inner.effect = inner.effect or outer.effect
    inner.user = inner.user or outer.user
    inner.session_id = inner.session_id or outer.session_id
    inner.arguments = inner.arguments if inner.arguments is not None else outer.arguments
    inner.authorization = inner.authorization or outer.authorization
    inner.approval_reasons = tuple(dict.fromkeys(outer.approval_reasons + inner.approval_reasons))
    inner.approval_id = inner.approval_id or outer.approval_id
    inner.approved_by = inner.approved_by or outer.approved_by
    inner.standing_approval = inner.standing_approval or outer.standing_approval
    inner.preview = inner.preview or outer.preview
    inner.actions = inner.actions or outer.actions
    inner.would_refuse = outer.would_refuse + inner.would_refuse
    inner.records = inner.records or outer.records
    inner.planted = outer.planted + tuple(p for p in inner.planted if p not in outer.planted)
    if outer.mode == "observe":
        inner.mode = "observe"
    return inner
