"""Walking a value for the text inside it: arguments, results, exceptions.

One walk serves every check that looks for text (untrusted content, credentials, redaction),
so none of them is blind where another sees: strings and bytes; dicts and any other mapping;
lists, tuples, sets, deques; dataclasses, pydantic models, objects with ``__dict__`` or
``__slots__``; exceptions with their arguments, notes, attributes, cause and context. The
walk is bounded (depth and number of values); what lies past the bound is searched as its
``repr`` and the walk says it was cut short, so a caller that must be sure can refuse.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Iterator, Mapping, Set
from decimal import Decimal
from typing import Any

#: Values that hold no text and need no look.
_ATOMS = frozenset({type(None), bool, int, float, complex, Decimal})
_SEQUENCES = (list, tuple, deque, Set)
_OBJECT_REPR: Any = object.__repr__
MAX_DEPTH = 24
MAX_VALUES = 20_000


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__ hides nothing from a search of nothing
        return ""


class Texts:
    """The text inside a value: iterate for the strings; ``complete`` says whether every
    part was reached (False when the walk hit its bounds and searched the rest as ``repr``)."""

    __slots__ = ("_seen", "_values", "complete", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.complete = True
        self._seen: set[int] = set()
        self._values = 0

    def __iter__(self) -> Iterator[str]:
        return self._walk(self.value, 0)

    def _walk(self, value: Any, depth: int) -> Iterator[str]:
        kind = type(value)
        if kind is str:
            yield value
            return
        if kind in _ATOMS:
            return
        if isinstance(value, str):
            yield str.__str__(value)
            return
        if isinstance(value, (bytes, bytearray, memoryview)):
            yield bytes(value).decode("utf-8", "replace")
            return
        self._values += 1
        if depth > MAX_DEPTH or self._values > MAX_VALUES:
            self.complete = False  # nested past reason: its text as a whole, never skipped
            yield _repr(value)
            return
        if id(value) in self._seen:
            return
        self._seen.add(id(value))
        for child in children(value):
            yield from self._walk(child, depth + 1)


def children(value: Any) -> Iterator[Any]:
    """The values directly inside ``value`` that may hold text (mapping keys included)."""
    if isinstance(value, Mapping):
        for key, item in list(value.items()):
            yield key
            yield item
    elif isinstance(value, _SEQUENCES):
        yield from list(value)
    elif isinstance(value, BaseException):
        yield from value.args
        yield from getattr(value, "__notes__", None) or ()
        yield from getattr(value, "exceptions", None) or ()  # an ExceptionGroup
        yield from _attributes(value)
        yield value.__cause__
        yield value.__context__
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield getattr(value, f.name, None)
        yield from _extra_attributes(value, {f.name for f in dataclasses.fields(value)})
    elif _is_model(value):
        yield from _attributes(value)
        extra = getattr(value, "__pydantic_extra__", None)
        if extra:
            yield extra
    elif isinstance(value, type) or callable(value):
        return  # classes and functions: code, not data
    elif hasattr(value, "__dict__") or hasattr(type(value), "__slots__"):
        yield from _attributes(value)
    else:
        yield _repr(value)  # an object of its own kind: what it shows is what it holds


def _is_model(value: Any) -> bool:
    return hasattr(type(value), "model_fields") and hasattr(value, "model_dump")


def _attributes(value: Any) -> Iterator[Any]:
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        yield from list(attributes.values())
    for cls in type(value).__mro__:
        for slot in cls.__dict__.get("__slots__", ()):
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                found = getattr(value, slot, None)
                if found is not None:
                    yield found


def _extra_attributes(value: Any, known: set[str]) -> Iterator[Any]:
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        yield from (v for k, v in list(attributes.items()) if k not in known)


def strings_in(value: Any) -> Texts:
    """Every string inside ``value`` (see ``Texts``)."""
    return Texts(value)


def non_finite(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is, or holds in a container, a NaN or an infinity (which compare
    false with every number, so ``amount > 1000`` would let them through)."""
    kind = type(value)
    if kind is float:
        return not math.isfinite(value)
    if kind in (str, int, bool, type(None)):
        return False
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Decimal):
        return not value.is_finite()
    if isinstance(value, complex):
        return not (math.isfinite(value.real) and math.isfinite(value.imag))
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, Mapping):
        return any(non_finite(v, depth + 1) for v in value.values())
    if isinstance(value, _SEQUENCES):
        return any(non_finite(v, depth + 1) for v in value)
    return False


def plain(value: Any, hide: Any = None, depth: int = 0) -> Any:
    """A JSON-friendly copy of ``value``: mappings, sequences, dataclasses, pydantic models and
    objects become dicts and lists; anything else its ``repr``. ``hide(key)`` names keys
    whose values are replaced by ``"[REDACTED]"``."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if depth > MAX_DEPTH:
        return _repr(value)
    d = depth + 1
    if isinstance(value, Mapping):
        return {
            str(k): "[REDACTED]" if hide is not None and hide(str(k)) else plain(v, hide, d)
            for k, v in list(value.items())
        }
    if isinstance(value, _SEQUENCES):
        return [plain(v, hide, d) for v in list(value)]
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        return plain(fields, hide, d)
    if _is_model(value):
        try:
            return plain(value.model_dump(), hide, d)
        except Exception:
            return _repr(value)
    if isinstance(value, (str, int, float)):
        return value
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and type(value).__repr__ is _OBJECT_REPR:
        # An object that does not say how to show itself: its public attributes.
        return plain({k: v for k, v in attributes.items() if not k.startswith("_")}, hide, d)
    return _repr(value)
