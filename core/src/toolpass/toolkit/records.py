"""Which text of a tool's output is untrusted: by field (``untrusted_fields``) and by record
(``trust=``).

A *field path* names where untrusted text is: dot-separated keys, ``*`` for any key of a
mapping or any item of a list (``"body"``, ``"reviews.*"``: every value of the mapping under
``reviews``, but not its keys; ``"*.description"``). A path matches from any mapping of the
output, at any depth, in JSON text too; a key that itself holds dots is matched whole as well.

A *record* is a mapping of the output as toolpass reads it: a dict, or a dataclass, pydantic
model, named tuple or other object with attributes (its fields, or every attribute, private
ones too, as a dict, whatever its ``repr``); JSON text that no record holds (the whole output
as text, a protocol's text block) is read for records too. The protocol wrappers around a
result (a ``{"type": "text", "text": ...}`` block, an MCP result's ``content``) are not
records where no record holds them (inside one, they are records too). Each text belongs to
the innermost record that holds it, and ``trust(record)`` is asked of that record alone:
``True`` (exactly) makes its text trusted; anything else, or an exception, leaves it to
``untrusted_fields`` (or untrusted whole). A record inside another is asked on its own (trust
never flows down), and JSON text inside a record is that record's content: records written in
it are never asked (an attacker writes text, not structure). What lies deeper than
``MAX_DEPTH`` is untrusted, never any record's.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any, cast

from toolpass.rules.walk import plain, strings_in

Trust = Callable[[Mapping[str, Any]], Any]
#: How many records one output may ask ``trust`` of; the rest are untrusted.
MAX_ASKED = 10_000
#: How many of the records' verdicts the audit event shows (with a count of the rest).
MAX_SHOWN = 20
#: Nested deeper than this (JSON text inside JSON text...), text is untrusted unread.
MAX_DEPTH = 64
_BLOCK_KEYS = frozenset({"type", "text", "annotations", "meta", "_meta"})
_STRUCTURED = ("structuredContent", "structured_content")
_RESULT_KEYS = frozenset(
    {*_STRUCTURED, "content", "isError", "is_error", "resultType", "result_type", "meta", "_meta"}
    | {"toolUseId", "status"}  # a Strands ToolResult
)
#: A Strands ToolResult's content block: ``{"text": ...}`` or ``{"json": ...}``.
_CONTENT_BLOCKS = (frozenset({"text"}), frozenset({"json"}))


def checked_trust(tool: str, trust: Any) -> Trust | None:
    """``trust=`` checked: None, or a plain function of one record."""
    if trust is None:
        return None
    if not callable(trust) or inspect.iscoroutinefunction(trust):
        raise TypeError(
            f"{tool}: trust is a plain function (record) -> bool, called on each record of "
            f"its output, not {trust!r}"
        )
    return cast(Trust, trust)


def field_paths(names: Iterable[str]) -> frozenset[str]:
    """``names`` checked as field paths (see the module's docstring); ``ValueError`` for one
    that is not."""
    found = frozenset(names)
    for name in found:
        _segments(name)
    return found


@lru_cache(maxsize=256)
def _segments(path: str) -> tuple[str, ...]:
    parts = tuple(path.split("."))
    if not path or any(not p or ("*" in p and p != "*") for p in parts):
        raise ValueError(
            f"untrusted_fields: {path!r} is not a field path (keys joined by dots, '*' for any "
            "key or item: 'body', 'reviews.*', '*.description')"
        )
    return parts


@dataclass
class Sorted:
    """An output's texts: untrusted ones, those vouched for by a trusted record, those
    vouched for as fields outside ``untrusted_fields``; and the records' verdicts."""

    untrusted: list[str] = field(default_factory=list)
    by_record: list[str] = field(default_factory=list)
    by_field: list[str] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    asked: int = 0
    trusted: int = 0


def sort_texts(value: Any, fields: frozenset[str] | None, trust: Trust | None) -> Sorted:
    """The texts of ``value`` (any output) sorted by ``fields`` and ``trust``. With
    ``fields`` of which no path is found at all, no field vouches: a result shaped otherwise
    than declared vouches for nothing (trusted records still do)."""
    reader = _Reader(fields, trust)
    reader.read(_data(value), "$", None, (), False, True, 0)
    done = reader.done
    if fields is not None and not reader.found:
        done.untrusted += done.by_field
        done.by_field = []
    return done


def audit_of(done: Sorted) -> dict[str, Any]:
    """What the audit event says of the records: how many were asked, trusted, and the
    first verdicts (path, trusted, error)."""
    return {
        "asked": done.asked,
        "trusted": done.trusted,
        "records": done.verdicts[:MAX_SHOWN],
    }


class _Reader:
    def __init__(self, fields: frozenset[str] | None, trust: Trust | None) -> None:
        self.paths = tuple(_segments(f) for f in fields or ())
        self.whole = frozenset(f for f in fields or () if "." in f)  # a dotted key, whole
        self.fields_declared = fields is not None
        self.trust = trust
        self.found = False
        self.done = Sorted()

    def _step(self, states: tuple[tuple[int, int], ...], key: str | None) -> tuple[Any, bool]:
        """The paths' states after one step (``key``, or None for a list's item), and
        whether a path ends there."""
        nxt: list[tuple[int, int]] = []
        ended = key is not None and key in self.whole
        starts = ((p, 0) for p in range(len(self.paths)))
        for p, i in dict.fromkeys((*states, *starts)):
            segment = self.paths[p][i]
            if segment == "*" or segment == key:
                if i + 1 == len(self.paths[p]):
                    ended = True
                else:
                    nxt.append((p, i + 1))
            elif key is None:
                nxt.append((p, i))  # a list's items are transparent to a key
        return tuple(dict.fromkeys(nxt)), ended

    def read(
        self,
        value: Any,
        at: str,
        owner: bool | None,
        states: tuple[tuple[int, int], ...],
        under: bool,
        asking: bool,
        depth: int,
    ) -> None:
        """``owner``: the verdict of the innermost record holding ``value`` (None: none);
        ``under``: inside an untrusted field; ``asking``: records here may be asked."""
        if depth > MAX_DEPTH or isinstance(value, _Cut):
            cut = value.value if isinstance(value, _Cut) else value
            self.done.untrusted.extend(t for t in strings_in(cut) if t)
            return
        if isinstance(value, str):
            self._text(value, at, owner, states, under, asking, depth)
        elif isinstance(value, Mapping):
            self._mapping(value, at, owner, states, under, asking, depth)
        elif isinstance(value, _Wrapped):
            self._mapping(value.result, at, owner, states, under, asking, depth, wrapped=True)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                nxt, ended = self._step(states, None)
                self.found |= ended and owner is not True
                self.read(item, f"{at}[{index}]", owner, nxt, under or ended, asking, depth + 1)
        elif value is not None and not isinstance(value, bool):
            self._text(str(value), at, owner, states, under, False, depth)  # an id, an amount

    def _mapping(
        self,
        record: Mapping[str, Any],
        at: str,
        owner: bool | None,
        states: tuple[tuple[int, int], ...],
        under: bool,
        asking: bool,
        depth: int,
        *,
        wrapped: bool = False,
    ) -> None:
        # A protocol's wrapper only where no record holds it: inside one, it is a record.
        envelope = owner is None and _envelope(record)
        wrapper = owner is None and (wrapped or envelope or _block(record))
        items = list(record.items())
        if self.trust is not None and asking and not wrapper:
            owner = self._ask(record, at)
        for key, item in items:
            nxt, ended = self._step(states, str(key))
            self.found |= ended and owner is not True
            self._text(str(key), at, owner, (), under, False, depth, is_key=True)
            where = f"{at}.{key}" if str(key).isidentifier() else f"{at}[{json.dumps(key)}]"
            here = asking and not (envelope and key in ("meta", "_meta"))  # the server's own
            child = _Wrapped(item) if envelope and _wraps_a_value(key, item) else item
            if envelope and key == "content" and isinstance(item, list):
                child = [_Wrapped(b) if _content_block(b) else b for b in item]
            self.read(child, where, owner, nxt, under or ended, here, depth + 1)

    def _ask(self, record: Mapping[str, Any], at: str) -> bool:
        done = self.done
        if done.asked >= MAX_ASKED:
            self._verdict(at, False, f"more than {MAX_ASKED} records: not asked")
            return False
        done.asked += 1
        assert self.trust is not None
        try:
            answer = self.trust(MappingProxyType(record))  # read-only: it cannot drop text
        except Exception as exc:
            self._verdict(at, False, f"{type(exc).__name__}: {exc}"[:200])
            return False
        trusted = answer is True
        done.trusted += trusted
        self._verdict(
            at, trusted, None if isinstance(answer, bool) else f"answered {answer!r}"[:80]
        )
        return trusted

    def _verdict(self, at: str, trusted: bool, error: str | None) -> None:
        if len(self.done.verdicts) < MAX_SHOWN:
            verdict: dict[str, Any] = {"record": at[:200], "trusted": trusted}
            if error is not None:
                verdict["error"] = error
            self.done.verdicts.append(verdict)

    def _text(
        self,
        text: str,
        at: str,
        owner: bool | None,
        states: tuple[tuple[int, int], ...],
        under: bool,
        asking: bool,
        depth: int,
        *,
        is_key: bool = False,
    ) -> None:
        done = self.done
        if not text:
            return
        if owner is True:
            done.by_record.append(text)
            return
        if under:
            done.untrusted.append(text)
            return
        parsed = None if is_key else _json(text)
        if parsed is not None:  # read as data; records in it asked only if none holds it
            self.read(parsed, at, owner, states, under, asking and owner is None, depth + 1)
        elif self.fields_declared:
            done.by_field.append(text)
        else:
            done.untrusted.append(text)


class _Cut:
    """What lies deeper than ``MAX_DEPTH``: its text is untrusted."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


_SEQUENCES = (list, tuple, set, frozenset)


def _data(value: Any, depth: int = 0) -> Any:
    """``value`` as records are read: plain data where every object with attributes is the
    dict of its public ones (a named tuple its fields), whatever its ``repr``; past
    ``MAX_DEPTH``, a ``_Cut``."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, (str, int, float, bytes, bytearray, memoryview, BaseException)):
        return plain(value)
    if depth > MAX_DEPTH:
        return _Cut(value)
    d = depth + 1
    if isinstance(value, Mapping):
        return {str(k): _data(v, d) for k, v in list(value.items())}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return _data(dict(value._asdict()), depth)
    if isinstance(value, _SEQUENCES) or type(value).__name__ == "deque":
        return [_data(v, d) for v in list(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        return _data({**(_attributes(value) or {}), **fields}, depth)  # attributes set later too
    if hasattr(type(value), "model_fields") and hasattr(value, "model_dump"):
        try:  # every field, those its dump excludes too (its repr shows them)
            return _data({**dict(value), **value.model_dump()}, depth)
        except Exception:
            return _Cut(value)
    attributes = _attributes(value)
    return plain(value) if attributes is None else _data(attributes, depth)


#: Modules whose objects are values read as their ``repr`` (a date, a UUID, a path), not
#: records, though they keep attributes.
_VALUE_MODULES = frozenset(
    {"datetime", "decimal", "enum", "fractions", "ipaddress", "pathlib", "re", "uuid"}
)


def _attributes(value: Any) -> dict[str, Any] | None:
    """The attributes of an object that has them (in ``__dict__`` or slots), private ones
    too (a property or its ``repr`` may show them); None for a value that has none, or is of
    ``_VALUE_MODULES`` (read as its ``repr``)."""
    kind = type(value)
    if isinstance(value, (type, enum.Enum)) or callable(value):
        return None
    if kind.__module__.partition(".")[0].lstrip("_") in _VALUE_MODULES:
        return None
    found = {}
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        found.update(attributes)
    for cls in kind.__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            named = isinstance(slot, str) and slot not in ("__dict__", "__weakref__")
            if named and hasattr(value, slot):
                found[slot] = getattr(value, slot)
    return found or None


class _Wrapped:
    """A tool result's structured value ``{"result": ...}`` (MCP's wrapping of a value that
    is not an object): a wrapper, not a record."""

    __slots__ = ("result",)

    def __init__(self, result: Mapping[str, Any]) -> None:
        self.result = result


def _wraps_a_value(key: str, item: Any) -> bool:
    """Whether an envelope's ``key`` holds ``{"result": value}``: the protocol's wrapping of
    a structured value that is not an object."""
    return key in _STRUCTURED and isinstance(item, Mapping) and item.keys() == {"result"}


def _content_block(item: Any) -> bool:
    """Whether ``item`` of an envelope's content is a bare text or JSON block around a
    result (a Strands ToolResult's), not a record of it."""
    return isinstance(item, Mapping) and item.keys() in _CONTENT_BLOCKS


def _block(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a protocol's text block around a result, not a record of it."""
    text = record.get("type") == "text" and isinstance(record.get("text"), str)
    return text and record.keys() <= _BLOCK_KEYS


def _envelope(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a tool result's envelope (an MCP ``CallToolResult``)."""
    content = record.get("content")
    return isinstance(content, list) and record.keys() <= _RESULT_KEYS


def _json(text: str) -> Any:
    """``text`` as JSON data when it is a JSON object or array, else None."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, (dict, list)) else None
