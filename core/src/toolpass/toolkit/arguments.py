"""Binding a call's arguments to the tool's signature, and strict type checks."""

from __future__ import annotations

import copy
import dataclasses
import enum
import inspect
import types
import typing
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from toolpass.outcome.errors import ToolRefused

_P = inspect.Parameter
TypeCheck = Callable[[Any], bool]


def invalid(message: str) -> ToolRefused:
    return ToolRefused(
        "invalid_arguments",
        f"{message}. Fix the arguments and call the tool again.",
    )


def show(value: Any, limit: int = 40) -> str:
    """A short, safe rendering of a value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Binder:
    """Binds ``(args, kwargs)`` to a dict of argument values, quickly.

    Signatures made only of ordinary parameters (the usual tool) are bound without
    ``inspect``; others fall back to ``Signature.bind``.
    """

    __slots__ = ("defaults", "kwonly", "names", "positional", "signature", "simple", "takes_any")

    def __init__(self, signature: inspect.Signature) -> None:
        params = list(signature.parameters.values())
        self.signature = signature
        self.simple = all(p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY) for p in params)
        self.positional = tuple(p.name for p in params if p.kind is _P.POSITIONAL_OR_KEYWORD)
        self.kwonly = frozenset(p.name for p in params if p.kind is _P.KEYWORD_ONLY)
        self.names = frozenset(p.name for p in params)
        self.defaults = {p.name: p.default for p in params if p.default is not _P.empty}
        self.takes_any = False

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if not self.simple:
            return self._bind_slow(args, kwargs)
        positional = self.positional
        if len(args) > len(positional):
            raise invalid(f"Too many positional arguments: the tool takes {len(positional)}")
        bound = dict(zip(positional, args, strict=False))
        for name, value in kwargs.items():
            if name not in self.names:
                raise invalid(f"Unexpected argument {name!r}")
            if name in bound:
                raise invalid(f"Argument {name!r} was given twice")
            bound[name] = value
        if len(bound) < len(self.names):
            for name, default in self.defaults.items():
                bound.setdefault(name, default)
            missing = [n for n in self.signature.parameters if n not in bound]
            if missing:
                raise invalid("Missing argument " + ", ".join(repr(n) for n in missing))
        return bound

    @classmethod
    def passthrough(cls) -> Binder:
        """A binder for calls whose arguments a framework has already validated: they are
        taken as given (keyword arguments only)."""
        binder = cls(inspect.Signature())
        binder.simple, binder.takes_any = False, True
        return binder

    def _bind_slow(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.takes_any:
            if args:
                raise invalid("The tool takes keyword arguments only")
            return dict(kwargs)
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise invalid(f"The arguments do not fit the tool: {exc}")
        ba.apply_defaults()
        return dict(ba.arguments)

    def call_args(self, bound: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` that pass ``bound`` back to the function (``kwargs`` may be
        ``bound`` itself: copy it before changing it)."""
        if self.simple:
            return (), bound  # type: ignore[return-value]
        ba = inspect.BoundArguments(self.signature, dict(bound))
        return ba.args, dict(ba.kwargs)


# Snapshots: the body runs on exactly the values that were checked.

_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes, complex, Decimal})


def snapshot(arguments: dict[str, Any]) -> dict[str, Any]:
    """A copy of the arguments that the caller can no longer change: containers (dicts,
    lists, sets, tuples, deques, bytearrays), dataclasses and pydantic models are copied all
    the way down; other objects (clients, handles) are passed as they are. Arguments that are
    all plain values are returned as they are."""
    for value in arguments.values():
        if type(value) not in _IMMUTABLE:
            return {name: _frozen(value, 0) for name, value in arguments.items()}
    return arguments


def _frozen(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in _IMMUTABLE or depth > 64:
        return value
    d = depth + 1
    if kind is dict:
        return {_frozen(k, d): _frozen(v, d) for k, v in value.items()}
    if kind is list:
        return [_frozen(v, d) for v in value]
    if kind is tuple:
        return tuple(_frozen(v, d) for v in value)
    if kind in (set, frozenset):
        return kind(_frozen(v, d) for v in value)
    if kind is deque:
        return deque((_frozen(v, d) for v in value), maxlen=value.maxlen)
    if kind is bytearray:
        return bytearray(value)
    data = isinstance(value, (Mapping, list, tuple, set, frozenset, deque))
    if data or dataclasses.is_dataclass(value) or hasattr(kind, "model_fields"):
        try:
            return copy.deepcopy(value)
        except Exception:
            return value  # holds something that cannot be copied: passed as it is
    return value


# Strict types: "40" is not an int, True is not an int.


def _instance(cls: type) -> TypeCheck:
    return lambda v: isinstance(v, cls)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _float(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_none(v: Any) -> bool:
    return v is None


_SIMPLE: dict[Any, TypeCheck] = {int: _int, float: _float, type(None): _is_none, None: _is_none}


def type_check(hint: Any) -> TypeCheck | None:
    """A predicate for values of type ``hint``, or None where anything goes."""
    if hint is Any or hint is object or isinstance(hint, (typing.TypeVar, str)):
        return None
    if hint in _SIMPLE:
        return _SIMPLE[hint]
    origin = typing.get_origin(hint)
    params = typing.get_args(hint)
    if origin is typing.Annotated:
        return type_check(params[0])
    if isinstance(hint, typing.NewType):
        return type_check(hint.__supertype__)
    if origin is typing.Union or origin is types.UnionType:
        checks = [type_check(p) for p in params]
        if any(c is None for c in checks):
            return None
        alts = typing.cast(list[TypeCheck], checks)
        return lambda v: any(c(v) for c in alts)
    if origin is typing.Literal:
        allowed = [(type(p), p) for p in params]
        return lambda v: any(type(v) is t and v == p for t, p in allowed)
    if origin in (list, set, frozenset, Sequence, typing.Sequence):
        containers: Any = (list, tuple) if origin in (Sequence, typing.Sequence) else origin
        item = type_check(params[0]) if params else None
        if item is None:
            return _instance(containers)
        each: TypeCheck = item
        return lambda v: isinstance(v, containers) and all(each(x) for x in v)
    if origin is tuple:
        if not params or params == ((),):
            return _instance(tuple)
        if len(params) == 2 and params[1] is Ellipsis:
            item = type_check(params[0])
            return lambda v: isinstance(v, tuple) and (item is None or all(item(x) for x in v))
        items = [type_check(p) for p in params]
        return lambda v: (
            isinstance(v, tuple)
            and len(v) == len(items)
            and all(c is None or c(x) for c, x in zip(items, v, strict=True))
        )
    if origin in (dict, Mapping, typing.Mapping):
        kind: Any = dict if origin is dict else Mapping
        key = type_check(params[0]) if params else None
        val = type_check(params[1]) if len(params) > 1 else None
        return lambda v: (
            isinstance(v, kind)
            and all((key is None or key(k)) and (val is None or val(x)) for k, x in v.items())
        )
    if typing.is_typeddict(hint):
        return _instance(dict)
    if isinstance(origin, type):
        return _instance(origin)
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum) or hint is not bool:
            return _instance(hint)
        return lambda v: isinstance(v, bool)
    return None


def type_name(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")
