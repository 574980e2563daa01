"""The time budget of one check: all of its requests together must fit in it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from toolpass.wire.errors import LookupFailed

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("toolpass_deadline", default=None)


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Run the block with ``seconds`` for all the requests it makes."""
    token = _DEADLINE.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining(default: float = 10.0) -> float:
    """Seconds left in the current budget (``default`` outside one).

    Raises :class:`LookupFailed` once the budget is spent.
    """
    current = _DEADLINE.get()
    if current is None:
        return default
    left = current[0] - time.monotonic()
    if left <= 0:
        raise LookupFailed(f"the check ran out of its {current[1]:g}s time budget")
    return left
