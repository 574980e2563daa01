"""What every store is: the protocol, and the error a failing one raises."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

T = TypeVar("T")

#: What ``Store.update`` calls with the value now stored (None when there is none): it
#: returns the value to store (None deletes it) and what ``update`` returns. It may be called
#: more than once (a store may retry it after a concurrent write), so it must only compute.
Change = Callable[[Any], "tuple[Any, T]"]


class StoreUnavailable(Exception):
    """The shared store could not be read or written; what depends on it must refuse."""


@runtime_checkable
class Store(Protocol):
    """Atomic updates of JSON values by key, and append-only lists of strings."""

    def get(self, key: str) -> Any:
        """The value stored at ``key``, or None."""

    def update(self, key: str, change: Change[T], *, ttl: float | None = None) -> T:
        """Replace the value at ``key`` by what ``change`` makes of it, atomically across
        every process using the store; ``ttl``: seconds the new value is kept."""

    def append(self, key: str, item: str, *, ttl: float | None = None) -> int:
        """Add ``item`` at the end of the list at ``key``; its new length."""

    def items(self, key: str, start: int = 0) -> list[str]:
        """The list at ``key`` from position ``start`` on."""

    def keys(self, prefix: str) -> list[str]:
        """Every key of a value (not a list) that starts with ``prefix``."""

    def close(self) -> None:
        """Release connections."""


@runtime_checkable
class ReadsWhileUpdating(Protocol):
    """A store that can update a key and read lists in one round trip (one transaction)."""

    def update_reading(
        self,
        key: str,
        change: Change[T],
        lists: Sequence[tuple[str, int]],
        *,
        ttl: float | None = None,
    ) -> tuple[T, list[list[str]]]:
        """:func:`update_reading`, done by the store itself."""


def update_reading(
    store: Store,
    key: str,
    change: Change[T],
    lists: Sequence[tuple[str, int]] = (),
    *,
    ttl: float | None = None,
) -> tuple[T, list[list[str]]]:
    """What ``change`` returns, and each list named in ``lists`` (a key and the position to
    read from), as one atomic step where the store can (Redis: one script; SQLite: one
    transaction; memory: one lock). A change that returns the value it was given writes
    nothing, so a pure read (``lambda value: (value, value)``) never writes. A value written
    with a ``ttl`` keeps the lists named at least as long (a store's own ``update_reading``;
    here each list keeps the ttl of its last ``append``)."""
    if hasattr(store, "update_reading"):  # (isinstance of a Protocol costs 10 µs a call)
        return cast(ReadsWhileUpdating, store).update_reading(key, change, lists, ttl=ttl)

    found = store.get(key)
    new, result = change(copy.deepcopy(found))
    if new != found:
        result = store.update(key, change, ttl=ttl)
    return result, [store.items(name, start) for name, start in lists]
