"""Whether the check under way asks everything anew (``check(..., fresh=True)``).

The engine sets it around one check; every cache below the decision cache (the kit's
``Remembered``, identity look-ups) reads it, so that a fresh check never answers from what an
earlier check learned about the user or the resource, and stores what it learns instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_FRESH: ContextVar[bool] = ContextVar("toolpass_fresh", default=False)


@contextmanager
def fresh_lookups(on: bool = True) -> Iterator[None]:
    """Run the block asking anew (``on``) or as usual."""
    token = _FRESH.set(on)
    try:
        yield
    finally:
        _FRESH.reset(token)


def asking_fresh() -> bool:
    """True inside a check that must not answer from any cache."""
    return _FRESH.get()
