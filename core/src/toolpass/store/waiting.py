"""Waiting for a value to change, without busy polling.

:func:`wait_changed` (and :func:`wait_changed_async`) return the value at a key once it
differs from the value the caller saw, or the value as it is when ``timeout`` passes. A
store that can tell when a key changes does (:class:`Watchable`): memory wakes the waiter on
the write itself, Redis through a pub/sub channel per key, SQLite on a write in this process
and otherwise by reading the one row with a bounded back-off (SQLite tells no other process
of a write). Any other store is read with that same bounded back-off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, Protocol, runtime_checkable

from toolpass.store.base import Store

#: The first pause of a back-off read, and the longest one.
FIRST_PAUSE, LONGEST_PAUSE = 0.01, 0.25


@runtime_checkable
class Watchable(Protocol):
    """A store that can wait for a key's value to change."""

    def wait(self, key: str, seen: Any, timeout: float) -> Any:
        """The value at ``key`` once it is not ``seen``, or as it is after ``timeout``."""

    async def wait_async(self, key: str, seen: Any, timeout: float) -> Any:
        """:meth:`wait`, awaited."""


def wait_changed(store: Store, key: str, seen: Any, timeout: float) -> Any:
    """The value at ``key`` once it is not ``seen``, or as it is after ``timeout`` seconds."""
    if isinstance(store, Watchable):
        return store.wait(key, seen, timeout)
    return poll(lambda: store.get(key), seen, timeout, time.sleep, backoff())


async def wait_changed_async(store: Store, key: str, seen: Any, timeout: float) -> Any:
    """:func:`wait_changed`, awaited."""
    import asyncio  # awaited on a running loop: already imported (not by ``import toolpass``)

    if isinstance(store, Watchable):
        return await store.wait_async(key, seen, timeout)
    return await poll_async(lambda: store.get(key), seen, timeout, asyncio.sleep, backoff())


def backoff(first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE) -> Iterator[float]:
    """Pauses that double from ``first`` up to ``longest``."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, longest)


def forever() -> Iterator[float]:
    """Pauses as long as the time left: for a waiter that every change wakes."""
    while True:
        yield float("inf")


def poll(
    read: Callable[[], Any],
    seen: Any,
    timeout: float,
    pause: Callable[[float], object],
    pauses: Iterator[float],
) -> Any:
    """Read until the value is not ``seen`` or ``timeout`` passes, pausing between reads
    (``pause`` may return early when woken)."""
    deadline = time.monotonic() + timeout
    while (value := read()) == seen:
        left = deadline - time.monotonic()
        if left <= 0:
            return value
        pause(min(next(pauses), left))
    return value


async def poll_async(
    read: Callable[[], Any],
    seen: Any,
    timeout: float,
    pause: Callable[[float], Awaitable[object]],
    pauses: Iterator[float],
) -> Any:
    """:func:`poll`, awaited."""
    deadline = time.monotonic() + timeout
    while (value := read()) == seen:
        left = deadline - time.monotonic()
        if left <= 0:
            return value
        await pause(min(next(pauses), left))
    return value


class Wakers:
    """Who waits in this process for a store's next write; ``wake()`` wakes them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._all: set[Callable[[], object]] = set()

    def wake(self) -> None:
        with self._lock:
            waiting = list(self._all)
        for wake in waiting:
            with suppress(RuntimeError):  # an event loop closed while its waiter was registered
                wake()

    @contextmanager
    def waiting(self) -> Iterator[Callable[[float], object]]:
        """A pause that ends early on the next write (registered before the first read,
        so no write between a read and the pause is missed)."""
        woken = threading.Event()

        def pause(seconds: float) -> None:
            woken.wait(seconds)
            woken.clear()

        with self._registered(woken.set):
            yield pause

    @asynccontextmanager
    async def waiting_async(self) -> AsyncIterator[Callable[[float], Awaitable[object]]]:
        """:meth:`waiting` for a coroutine: writes from any thread wake it."""
        import asyncio  # awaited on a running loop: already imported

        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        async def pause(seconds: float) -> None:
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(woken.wait(), seconds)
            woken.clear()

        with self._registered(lambda: loop.call_soon_threadsafe(woken.set)):
            yield pause

    @contextmanager
    def _registered(self, wake: Callable[[], object]) -> Iterator[None]:
        with self._lock:
            self._all.add(wake)
        try:
            yield
        finally:
            with self._lock:
                self._all.discard(wake)
