"""The decision cache: allow and deny for a while, unknown never; one look-up per question.

Bounded (least recently used entries go first) and safe under threads. Concurrent identical
questions share one look-up (single flight): the first asks, the others wait for its answer.
With a shared store, the store is the cache: a decision one process looked up (or asked
``fresh``) serves every process until it expires, and no process answers from a copy of its
own that another has replaced since. A store that fails is a miss (the system is asked),
never an answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from toolpass.store import Store, StoreUnavailable
from toolpass.wire.decision import Decision

log = logging.getLogger("toolpass.cache")


class _Flight:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Decision | None = None
        self.error: BaseException | None = None


class DecisionCache:
    """Cached decisions keyed by any hashable question."""

    def __init__(
        self,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        *,
        store: Store | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._clock = clock
        self._store = store
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, Decision]] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}

    def get(self, key: Hashable) -> Decision | None:
        """The cached decision (marked ``cached``), or None when absent or expired."""
        if self._store is not None:
            return self._shared(key)
        with self._lock:
            return self._get_locked(key)

    def peek(self, key: Hashable) -> Decision | None:
        """The cached decision when it can be had without I/O (never with a shared store)."""
        if self._store is not None:
            return None
        with self._lock:
            return self._get_locked(key)

    def _shared(self, key: Hashable) -> Decision | None:
        assert self._store is not None
        try:
            found = self._store.get(_name(key))
        except StoreUnavailable as exc:
            log.warning("toolpass could not read the shared decision cache: %s", exc)
            return None
        if found is None:
            return None
        try:
            fields = {f.name for f in dataclasses.fields(Decision)}
            decision = Decision(**{k: v for k, v in found["decision"].items() if k in fields})
            left = float(found["until"]) - time.time()
        except (TypeError, KeyError, ValueError, AttributeError):
            return None  # not a decision this version wrote: asked anew
        if decision.decision not in ("allow", "deny") or left <= 0:
            return None
        return decision

    def _get_locked(self, key: Hashable) -> Decision | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, decision: Decision, ttl: float) -> None:
        """Remember ``decision`` for ``ttl`` seconds; unknown and ``ttl <= 0`` are not kept."""
        if decision.decision == "unknown" or ttl <= 0:
            return
        stored = dataclasses.replace(decision, cached=True)
        if self._store is None:
            self._keep(key, stored, ttl)
            return
        value = {"decision": dataclasses.asdict(stored), "until": time.time() + ttl}
        try:
            self._store.update(_name(key), lambda _: (value, None), ttl=ttl)
        except StoreUnavailable as exc:
            log.warning("toolpass could not write the shared decision cache: %s", exc)

    def _keep(self, key: Hashable, stored: Decision, ttl: float) -> None:
        with self._lock:
            self._entries[key] = (self._clock() + ttl, stored)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def lookup(
        self,
        key: Hashable,
        ask: Callable[[], Decision],
        ttl: Callable[[Decision], float],
        *,
        fresh: bool = False,
    ) -> Decision:
        """The cached answer, or ``ask()`` once for all concurrent callers, then cached.

        ``fresh`` skips the cache and any look-up already under way, and stores the new answer.
        """
        if fresh:
            decision = ask()
            self.put(key, decision, ttl(decision))
            return decision
        hit = self.get(key)
        if hit is not None:
            return hit
        with self._lock:
            hit = self._get_locked(key)  # a flight may have landed since
            if hit is not None:
                return hit
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            assert flight.result is not None
            return flight.result
        try:
            flight.result = ask()
            self.put(key, flight.result, ttl(flight.result))
            return flight.result
        except BaseException as e:
            flight.error = e
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()

    def clear(self) -> None:
        """Forget every cached decision (of this process; shared ones expire)."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _name(key: Hashable) -> str:
    return "decision:" + hashlib.sha256(repr(key).encode("utf-8", "surrogatepass")).hexdigest()
