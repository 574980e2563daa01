"""The two drivers of the pipeline: sync and async, and what they run.

``steps`` (``toolkit.pipeline``) yields each piece of user code as a ``Step``; ``run_sync``
calls it, ``run_async`` awaits a coroutine function and runs a plain function in a worker
thread with the caller's context. The result (or the exception) is sent back.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Mapping
from typing import Any, NamedTuple

from toolpass.wire.decision import Decision

#: What the pipeline yields to its driver: ``(fn, args, kwargs, afn, inline)``.
Step = tuple[
    Callable[..., Any], tuple[Any, ...], Mapping[str, Any], Callable[..., Any] | None, bool
]


class Hook(NamedTuple):
    """User code the pipeline asks its driver to run.

    The hot steps (the authorizer, the body) yield a plain tuple of the same shape, which is
    cheaper to build; drivers unpack either.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = {}
    afn: Callable[..., Any] | None = None  # an async variant, preferred by the async driver
    inline: bool = False  # cheap code (validators, the body): never moved to a thread


class AsyncHookError(TypeError):
    """An async hook met a sync tool: a mistake in the setup, refused as ``check_error``."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(f"{fn!r} is async, so it cannot run for a sync tool")


NO_KWARGS: Mapping[str, Any] = {}
# Results that are never awaitable (checked by type before the general, slower test).
PLAIN = frozenset({type(None), bool, int, float, str, bytes, list, dict, tuple, set, Decision})


# Drivers.


def run_sync(gen: Generator[Step, Any, Any]) -> Any:
    """Drive ``steps`` in this thread: each hook is called directly."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            hook = gen.send(value) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        except BaseException:
            # The traceback keeps this frame: keep nothing of the last step in it (the
            # body's keyword arguments hold the credential).
            hook = value = error = fn = args = kwargs = None  # type: ignore[assignment]
            raise
        error = None
        fn, args, kwargs = hook[0], hook[1], hook[2]
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            value, error = None, exc
        else:
            if type(value) not in PLAIN and inspect.isawaitable(value):
                if inspect.iscoroutine(value):
                    value.close()
                value, error = None, AsyncHookError(fn)


async def run_async(gen: Generator[Step, Any, Any]) -> Any:
    """Drive ``steps`` on the event loop: async hooks are awaited, sync hooks run in a worker
    thread with the caller's context (so the session is seen there too)."""
    import asyncio  # only ever called on a running loop: already imported

    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            hook = gen.send(value) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        except BaseException:
            hook = value = error = fn = args = kwargs = afn = None  # type: ignore[assignment]
            raise
        error = None
        fn, args, kwargs, afn, inline = hook
        try:
            if afn is not None:
                value = await afn(*args, **kwargs)
            elif inline or inspect.iscoroutinefunction(fn):
                value = fn(*args, **kwargs)
            else:
                value = await asyncio.to_thread(fn, *args, **kwargs)
            if type(value) not in PLAIN and inspect.isawaitable(value):
                value = await value
        except BaseException as exc:
            value, error = None, exc
