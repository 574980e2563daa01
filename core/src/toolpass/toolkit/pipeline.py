"""The pipeline every tool call goes through, written once.

``steps`` runs ``CHECKS`` in order (``toolkit.checks``: session, arguments, scope, effect,
grants, task, limits, authorization, entitlements, untrusted_input, destinations,
private_data, exfiltration, places, approval), then the credential and the body, and writes
exactly one audit event whatever happened (one with the other layer's, when an adapter's call
and a secured tool's are one call: ``toolkit.one_event``). Where a step needs user code (an
authorizer, an approver, a credentials callable, the body itself) it yields a
``Step`` and the driver (``toolkit.drivers``) runs it: ``run_sync`` calls it; ``run_async``
awaits a coroutine function and runs a plain function in a worker thread with the caller's
context. The result (or the exception) is sent back into the generator, which carries on.
Nothing else differs between the two.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from typing import Any

from toolpass.intercept import context as intercept_context
from toolpass.intercept.context import CallScope
from toolpass.outcome.errors import ToolError, ToolRefused
from toolpass.rules.redact import redact, usable
from toolpass.store import StoreUnavailable
from toolpass.toolkit import checks, one_event
from toolpass.toolkit.checks import EXFILTRATION_REASON, CallState, credential
from toolpass.toolkit.drivers import NO_KWARGS, PLAIN, Step
from toolpass.toolkit.output import body_error, clear_frames, output, redacted_refusal
from toolpass.toolkit.refusals import check_error
from toolpass.toolkit.settings import Settings, configured_mode
from toolpass.toolkit.spec import ToolSpec

log = logging.getLogger("toolpass")

Check = Callable[[CallState], Generator[Step, Any, None] | None]
#: A lazy result (a generator, ``map``, any iterator or async iterator) is read inside the
#: call, at most this many items: past them the call is refused.
LAZY_LIMIT = 100_000

#: The checks before the body, in order: each refuses by raising, and returns a generator
#: of steps when it needs the driver (see ``toolkit.checks``).
CHECKS: tuple[Check, ...] = (
    checks.session,
    checks.arguments,
    checks.scope,
    checks.effect,
    checks.grants,
    checks.task,
    checks.limits,
    checks.authorization,
    checks.entitlements,
    checks.untrusted_input,
    checks.destinations,
    checks.private_data,
    checks.exfiltration,
    checks.places,
    checks.approval,
)


def plan(spec: ToolSpec, kit: Settings) -> tuple[tuple[Check, ...], bool]:
    """``CHECKS`` without those that cannot act on ``spec``'s calls under ``kit`` (each
    would return at once), and whether its calls are observed (``mode="observe"``): worked
    out once per tool and settings."""
    if spec.plan[0] is kit:
        return spec.plan[1], spec.plan[2]
    observed = observing(spec, kit)
    if spec.checked_elsewhere:
        elsewhere = (checks.session, checks.arguments) + ((checks.places,) if spec.places else ())
        spec.plan = (kit, elsewhere, observed)
        return spec.plan[1], observed
    skip: set[Check] = set()
    if kit.entitlements is None:
        skip |= {checks.effect, checks.entitlements}
    if spec.authorize is None:
        skip.add(checks.authorization)
    if not spec.sends_out:
        skip.add(checks.exfiltration)
        skip.add(checks.private_data)
    if not spec.destinations:
        skip.add(checks.destinations)
    if not spec.scope:
        skip.add(checks.scope)
    if not spec.places:
        skip.add(checks.places)
    planned = tuple(check for check in CHECKS if check not in skip)
    spec.plan = (kit, planned, observed)
    return planned, observed


def observing(spec: ToolSpec, kit: Settings) -> bool:
    """Whether ``spec``'s calls are observed: the narrowest mode said wins (the tool's or its
    rule's, the guard's, the toolkit's, the configuration's); enforce when none is."""
    mode = spec.mode or kit.mode or spec.default_mode or configured_mode(kit.permissions)
    return mode == "observe"


def steps(
    spec: ToolSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    body: Callable[[], Any] | None = None,
) -> Generator[Step, Any, Any]:
    """Every check of one call, in order, then the body; exactly one audit event at the end.

    ``body`` replaces the tool's function for this call (an adapter passes the framework's own
    handler, which already holds the arguments).
    """
    c = CallState(spec, args, kwargs, body)
    deciding = body in DECIDING
    one_event.join(c, deciding)
    planned, observed = plan(spec, c.kit)
    try:
        if observed:
            c.event.mode = "observe"
            yield from _observed(c, planned)
        else:
            for check in planned:
                more = check(c)
                if more is not None:
                    yield from more
        return (yield from _body(c))
    except ToolRefused as refused:
        c.event.outcome, c.event.code = "refused", refused.code
        c.event.message, c.event.detail = refused.message, refused.detail or None
        raise
    except ToolError as exc:
        c.event.outcome, c.event.detail = "error", str(exc)
        raise
    except Exception as exc:
        if c.reached and not isinstance(exc, StoreUnavailable):
            c.event.outcome, c.event.detail = "error", f"{type(exc).__name__}: {exc}"
            raise
        failed = check_error("toolpass", exc, ran=c.reached)
        log.log(
            logging.WARNING if failed.code == "store_unavailable" else logging.ERROR,
            "toolpass check failed for %s",
            spec.name,
            exc_info=failed.code != "store_unavailable",
        )
        c.event.outcome, c.event.code, c.event.message = "refused", failed.code, failed.message
        c.event.detail = failed.detail
        raise failed from exc
    except BaseException:
        c.event.outcome = "cancelled"
        raise
    finally:
        _let_go(c)
        one_event.write(c, deciding)


def _observed(c: CallState, planned: tuple[Check, ...]) -> Generator[Step, Any, None]:
    """Observe mode: each check runs, and what it would refuse is noted on the audit event
    instead of refused. A call that cannot be bound (no session, arguments its function does
    not take) is refused still: there is no call to run. A call enforcement would refuse
    gives its limit slot back, as there: the counts stay what enforcement would leave."""
    yield from _observing(c, planned)
    if c.event.would_refuse and c.held is not None:
        c.session.give_back(c.held)
        c.held = None


def _observing(c: CallState, planned: tuple[Check, ...]) -> Generator[Step, Any, None]:
    for check in planned:
        try:
            more = check(c)
            if more is not None:
                yield from more
        except ToolRefused as refused:
            if not hasattr(c, "call"):
                raise
            c.event.would(refused.code, refused.message, refused.detail or None)
        except Exception as exc:
            if not hasattr(c, "call"):
                raise
            failed = check_error(check.__name__, exc)
            log.warning("toolpass check %s failed for %s (observed)", check.__name__, c.spec.name)
            c.event.would(failed.code, failed.message, failed.detail)


def _body(c: CallState) -> Generator[Step, Any, Any]:
    """After the checks: the credential, fetched only now and held in no local of its own;
    then the body, watched by the request hook, its output or exception made safe to return."""
    spec, kit, session, event = c.spec, c.kit, c.session, c.event
    call_kwargs: Mapping[str, Any]
    fn, call_args, call_kwargs = spec.fn, *spec.binder.call_args(c.arguments)
    if c.body is not None:
        fn, call_args, call_kwargs = c.body, (), NO_KWARGS
    if spec.credential is not None:
        given: Mapping[str, str] = {"credential": (yield from credential(kit, spec.credential))}
        call_kwargs = {**call_kwargs, **given}
        given = NO_KWARGS
        event.secrets = usable((call_kwargs["credential"],))

    if spec.reads_private:
        session.note_private()
    if spec.untrusted_output or c.planted_read:
        session.tainted = True
    # From here the slot and the approval are spent.
    if c.grant is not None:
        c.grant.spend()  # released (and dropped) when the call ends
    c.held = None
    c.reached = True
    scope = None
    if kit.permissions is not None:  # the request hook watches the body
        # A person who approved sending data out approved it for the body's requests too;
        # an observed call asked nobody, so its requests are checked as unapproved.
        approved = EXFILTRATION_REASON in c.reasons and event.mode != "observe"
        scope = CallScope(spec, session, spec.toolkit, event, c.arguments, approved)
        scope.entitled, scope.effect = c.entitled, c.effect
        entered = intercept_context.enter(scope)
    failure: Exception | None = None
    adapting = one_event.adapting(c) if spec.framework else None
    try:
        result = yield Step(fn, call_args, call_kwargs, None, True)
        if type(result) in CONTAINERS:
            if lazy_within(result):  # a generator in a dict, say: read here, not later
                result = yield Step(settle, (result,), afn=asettle)
        elif type(result) not in PLAIN and isinstance(result, (Iterator, AsyncIterator)):
            result = yield _reading(result)  # in the call's scope: its requests are checked
    except Exception as exc:
        failure = exc
    finally:
        call_kwargs = NO_KWARGS  # the credential leaves this frame with the body
        if adapting is not None:
            one_event.adapted(adapting)
        if scope is not None:
            intercept_context.leave(entered)
            if kit.record is not None:
                _record(kit, spec, c.arguments, event.actions)
    # Raised out here, not in an ``except`` block, so no exception holding the
    # credential or untrusted text rides along as ``__context__``.
    if scope is not None and scope.refused is not None:
        failure = None
        raise scope.refused  # a refused request decides the call, caught or not
    untrusted = spec.untrusted_output or (scope is not None and scope.read_untrusted)
    untrusted = untrusted or c.planted_read
    if spec.places and scope is not None and scope.read_untrusted:
        checks.places_read_by_body(c)
    if failure is not None:
        if isinstance(failure, ToolRefused):
            refused = redacted_refusal(failure, event.secrets)
            if refused is not failure:
                clear_frames(failure)
            failure = None
            raise refused
        wrapped = body_error(session, failure, event.secrets, untrusted)
        if wrapped is None:
            raise failure
        failure = None
        raise wrapped
    if (kit.on_output or spec.on_output is not None) and c.body not in DECIDING:
        yield from _output_hooks(c, result)
    declared = spec.untrusted_fields is not None or spec.trust is not None
    if (scope is not None and scope.read_elsewhere and declared) or c.planted_read:
        spec = _wholly_untrusted(spec)
    result = output(spec, session, result, event.secrets, untrusted, c.arguments, event)
    event.outcome = "ok"
    return result


def _reading(result: Iterator[Any] | AsyncIterator[Any]) -> Step:
    """The step that reads a lazy result to its end: an iterator in the body's thread (a
    worker thread under the async driver), an async iterator on the loop."""
    if isinstance(result, Iterator):
        return Step(drain, (result,))
    return Step(_no_async_stream, (result,), afn=adrain)


def drain(items: Iterator[Any]) -> list[Any]:
    """A lazy result's items, read while the call's checks still watch its requests; closed
    when it is not read to its end, so its clean-up runs inside the call too."""
    taken: list[Any] = []
    try:
        for item in items:
            _count(taken, item)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
    return taken


async def adrain(items: AsyncIterator[Any]) -> list[Any]:
    """``drain`` for an async iterator."""
    taken: list[Any] = []
    try:
        async for item in items:
            _count(taken, item)
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
    return taken


def _count(taken: list[Any], item: Any) -> None:
    if len(taken) >= LAZY_LIMIT:
        raise _too_many()
    taken.append(item)


def _too_many() -> ToolRefused:
    return ToolRefused(
        "check_error",
        "The tool returned more items than toolpass reads from one call, so its output "
        "was withheld. Tell the user.",
        detail=f"a lazy result of more than {LAZY_LIMIT} items",
    )


#: Results walked for lazy values inside them (exact types: their subclasses are not).
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes})


def lazy_within(result: Any) -> bool:
    """Whether a container result holds an iterator or async iterator at any depth."""
    return next(_lazy_values(result), None) is not None


def _lazy_values(result: Any) -> Iterator[Any]:
    """The iterators and async iterators in a container result, at any depth."""
    stack, seen = [result], set()
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        for item in value.values() if type(value) is dict else value:
            kind = type(item)
            if kind in _ATOMS:
                continue
            if kind in CONTAINERS:
                stack.append(item)
            elif isinstance(item, (Iterator, AsyncIterator)):
                yield item


def settle(result: Any) -> Any:
    """``result`` with every lazy value in it read into a list; when that fails, every lazy
    value in it is closed, here in the call (a generator's clean-up may send requests)."""
    try:
        return Settler().settle(result)
    except BaseException:
        for value in _lazy_values(result):
            close = getattr(value, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):  # a refused request is the call's
                    close()
        raise


async def asettle(result: Any) -> Any:
    """``settle`` for the async driver."""
    try:
        return await Settler().asettle(result)
    except BaseException:
        for value in _lazy_values(result):
            close, aclose = getattr(value, "close", None), getattr(value, "aclose", None)
            with contextlib.suppress(Exception):  # a refused request is the call's
                if aclose is not None:
                    await aclose()
                elif close is not None:
                    close()
        raise


class Settler:
    """Reads every lazy value in a result, at any depth, into a list, in the call's scope;
    at most ``LAZY_LIMIT`` items in all."""

    def __init__(self) -> None:
        self.left = LAZY_LIMIT
        self.path: set[int] = set()  # the containers being rebuilt: one met again is a cycle

    def settle(self, value: Any) -> Any:
        kind = type(value)
        if kind in CONTAINERS:
            self._enter(value)
            try:
                if kind is dict:
                    return {k: self.settle(v) for k, v in value.items()}
                return kind(self.settle(v) for v in value)
            finally:
                self.path.discard(id(value))
        if kind in _ATOMS or kind in PLAIN:
            return value
        if isinstance(value, Iterator):
            return [self.settle(item) for item in self._taken(drain(value))]
        if isinstance(value, AsyncIterator):
            return _no_async_stream(value)
        return value

    async def asettle(self, value: Any) -> Any:
        kind = type(value)
        if kind in CONTAINERS:
            self._enter(value)
            try:
                if kind is dict:
                    return {k: await self.asettle(v) for k, v in value.items()}
                return kind([await self.asettle(v) for v in value])
            finally:
                self.path.discard(id(value))
        if kind in _ATOMS or kind in PLAIN:
            return value
        if isinstance(value, Iterator):
            import asyncio  # awaited on a running loop: already imported

            items = await asyncio.to_thread(drain, value)  # the call's context goes along
        elif isinstance(value, AsyncIterator):
            items = await adrain(value)
        else:
            return value
        return [await self.asettle(item) for item in self._taken(items)]

    def _enter(self, value: Any) -> None:
        if id(value) in self.path:
            raise ToolRefused(
                "check_error",
                "The tool returned a result that contains itself, so its output was "
                "withheld. Tell the user.",
                detail="a cyclic result holding a lazy value",
            )
        self.path.add(id(value))

    def _taken(self, items: list[Any]) -> list[Any]:
        self.left -= len(items)
        if self.left < 0:
            raise _too_many()
        return items


def _no_async_stream(items: AsyncIterator[Any]) -> Any:
    raise ToolRefused(
        "check_error",
        "The tool returned a stream that toolpass cannot check here. Tell the user.",
        detail="a sync tool returned an async iterator; return a list instead",
    )


def _wholly_untrusted(spec: ToolSpec) -> ToolSpec:
    """``spec`` for a call that read from a host no connection owns, or a place a planted
    write marked: no field or record of its output vouches for anything, whatever
    ``untrusted_fields`` or ``trust`` it declares."""
    copied = copy.copy(spec)
    copied.untrusted_fields = None
    copied.trust = None
    return copied


def decided() -> None:
    """The body of a pipeline that only decides, for a framework hook that runs the tool
    itself: every check runs, and no output is seen (output hooks are not called)."""


async def adecided() -> None:
    """``decided`` for the async driver."""


DECIDING = (decided, adecided)


def _output_hooks(c: CallState, result: Any) -> Generator[Step, Any, None]:
    """The toolkit's and the tool's ``on_output`` hooks, each given the call and its output
    (redacted of the credential); one that fails keeps the output from the model."""
    seen = redact(result, c.event.secrets) if c.event.secrets else result
    hooks = c.kit.on_output + ((c.spec.on_output,) if c.spec.on_output is not None else ())
    for hook in hooks:
        try:
            yield Step(hook, (c.call, seen))
        except ToolRefused as refused:
            if c.event.mode != "observe":
                raise
            c.event.would(refused.code, refused.message, refused.detail or None)
        except Exception as exc:
            failed = check_error("an output hook", exc)
            if c.event.mode != "observe":
                raise failed
            c.event.would(failed.code, failed.message, failed.detail)


def _let_go(c: CallState) -> None:
    """Give back the slot of a call whose body never ran, and release its approval; a store
    that fails here is logged (the call's outcome is decided already)."""
    try:
        if c.held is not None:  # taken from the session's counts
            c.session.give_back(c.held)
        if c.grant is not None:
            c.grant.release()
    except StoreUnavailable:
        log.warning("toolpass could not give back %s's slot or approval", c.spec.name)


def _record(kit: Settings, spec: ToolSpec, arguments: Mapping[str, Any], actions: Any) -> None:
    try:
        assert kit.record is not None
        kit.record.record(spec.name, arguments, actions)
    except Exception:
        log.exception("toolpass could not record what %s did", spec.name)
