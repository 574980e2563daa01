"""A store in this process's memory."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from toolpass.store.base import Change, T
from toolpass.store.waiting import Wakers, forever, poll, poll_async


class MemoryStore:
    """A store in this process's memory: the default, shared by nothing else."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._values: dict[str, tuple[Any, float | None]] = {}
        self._lists: dict[str, tuple[list[str], float | None]] = {}
        self._wakers = Wakers()

    def __repr__(self) -> str:
        return "MemoryStore()"

    def _expires(self, ttl: float | None) -> float | None:
        return None if ttl is None else self._clock() + ttl

    def _live(self, found: tuple[Any, float | None] | None) -> Any:
        if found is None or (found[1] is not None and found[1] <= self._clock()):
            return None
        return found[0]

    def get(self, key: str) -> Any:
        with self._lock:
            return copy.deepcopy(self._live(self._values.get(key)))

    def update(self, key: str, change: Change[T], *, ttl: float | None = None) -> T:
        with self._lock:
            value, result = change(copy.deepcopy(self._live(self._values.get(key))))
            if value is None:
                self._values.pop(key, None)
            else:
                self._values[key] = (copy.deepcopy(value), self._expires(ttl))
        self._wakers.wake()
        return result

    def update_reading(
        self,
        key: str,
        change: Change[T],
        lists: Sequence[tuple[str, int]],
        *,
        ttl: float | None = None,
    ) -> tuple[T, list[list[str]]]:
        """:func:`~toolpass.store.update_reading` under one lock."""
        with self._lock:
            found = self._live(self._values.get(key))
            value, result = change(copy.deepcopy(found))
            changed = value != found
            if changed and value is None:
                self._values.pop(key, None)
            elif changed:
                self._values[key] = (copy.deepcopy(value), self._expires(ttl))
                if ttl is not None:  # the lists live as long as the value
                    for name, _ in lists:
                        if (items := self._live(self._lists.get(name))) is not None:
                            self._lists[name] = (items, self._expires(ttl))
            read = [list((self._live(self._lists.get(n)) or [])[s:]) for n, s in lists]
        if changed:
            self._wakers.wake()
        return result, read

    def wait(self, key: str, seen: Any, timeout: float) -> Any:
        """The value at ``key`` once it is not ``seen`` (woken by the write itself), or as it
        is after ``timeout`` seconds."""
        with self._wakers.waiting() as pause:
            return poll(lambda: self.get(key), seen, timeout, pause, forever())

    async def wait_async(self, key: str, seen: Any, timeout: float) -> Any:
        """:meth:`wait`, awaited."""
        async with self._wakers.waiting_async() as pause:
            return await poll_async(lambda: self.get(key), seen, timeout, pause, forever())

    def append(self, key: str, item: str, *, ttl: float | None = None) -> int:
        with self._lock:
            found = self._lists.get(key)
            items = self._live(found) or []
            items.append(item)
            self._lists[key] = (items, self._expires(ttl))
            return len(items)

    def items(self, key: str, start: int = 0) -> list[str]:
        with self._lock:
            return list((self._live(self._lists.get(key)) or [])[start:])

    def keys(self, prefix: str) -> list[str]:
        with self._lock:
            return sorted(
                k for k, v in self._values.items() if k.startswith(prefix) and self._live(v)
            )

    def close(self) -> None:
        pass
