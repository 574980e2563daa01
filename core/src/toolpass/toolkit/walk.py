"""Walking a value for the text inside it: arguments, results, exceptions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _text_of(value: Any) -> str:
    try:
        return repr(value)
    except RecursionError:
        return ""


def strings_in(value: Any, _depth: int = 0) -> Iterator[str]:
    """Every string inside ``value`` (containers searched, keys included)."""
    if isinstance(value, str):
        yield value
    elif _depth > 20:  # nested past reason: search its text as a whole, never skip it
        yield _text_of(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k, _depth + 1)
            yield from strings_in(v, _depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from strings_in(v, _depth + 1)
    elif isinstance(value, (bytes, bytearray)):
        yield bytes(value).decode("utf-8", "replace")
