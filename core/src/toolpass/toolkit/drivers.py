"""The two drivers of the pipeline: sync and async, and what they run.

``steps`` (``toolkit.pipeline``) yields each piece of user code as a ``Step``; ``run_sync``
calls it, ``run_async`` awaits a coroutine function and runs a plain function in a worker
thread with the caller's context. The result (or the exception) is sent back.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Mapping
from typing import Any

from toolpass.wire.decision import Decision

NO_KWARGS: Mapping[str, Any] = {}


class Step:
    """User code the pipeline asks its driver to run: ``fn(*args, **kwargs)``. ``afn`` is an
    async variant the async driver prefers; ``inline`` marks cheap code (validators, the
    body) that the async driver never moves to a worker thread."""

    __slots__ = ("afn", "args", "fn", "inline", "kwargs")

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] = NO_KWARGS,
        afn: Callable[..., Any] | None = None,
        inline: bool = False,
    ) -> None:
        self.fn, self.args, self.kwargs, self.afn, self.inline = fn, args, kwargs, afn, inline


class AsyncHookError(TypeError):
    """An async hook met a sync tool: a mistake in the setup, refused as ``check_error``."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(f"{fn!r} is async, so it cannot run for a sync tool")


# Results that are never awaitable (checked by type before the general, slower test).
PLAIN = frozenset({type(None), bool, int, float, str, bytes, list, dict, tuple, set, Decision})


# Drivers.


def run_sync(gen: Generator[Step, Any, Any]) -> Any:
    """Drive ``steps`` in this thread: each hook is called directly."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = gen.send(value) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        except BaseException:
            # The traceback keeps this frame: keep nothing of the last step in it (the
            # body's keyword arguments hold the credential).
            step = value = error = fn = args = kwargs = None  # type: ignore[assignment]
            raise
        error = None
        fn, args, kwargs = step.fn, step.args, step.kwargs
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
            step = gen.send(value) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        except BaseException:
            step = value = error = fn = args = kwargs = afn = None  # type: ignore[assignment]
            raise
        error = None
        fn, args, kwargs, afn, inline = step.fn, step.args, step.kwargs, step.afn, step.inline
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
