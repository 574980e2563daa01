"""Planted writes: a write of untrusted text into a place that is later read as trusted.

A tool names the places its calls read or write (``places={"path": "file"}``: the argument
``path`` names a place of kind ``file``). A call that changes something (or may: a tool
declaring no effect), whose other arguments carry untrusted text (a run of six words read in
untrusted content, or a value read only there) or whose tool reads untrusted content itself
(``untrusted_output``), marks every place it names; so does one that names a place already
marked (a copy, a move). A later call naming a marked place has its whole output untrusted,
whatever the tool declares. Marks are per user: in the toolkit's shared store when it has one
(a later session of the same user, in another process, sees them), else in the toolkit's
memory; each is kept ``places_ttl`` seconds (30 days by default), and a user's record as
long as its longest mark.

A place is known by its value normalised for its kind, conservatively (two spellings that may
name one place are one): for every kind, compatibility forms, case, surrounding spaces and a
trailing slash are ignored. ``file``, ``path``, ``directory`` and ``folder`` are one family,
read as paths (a ``pathlib`` path as its text, ``\\`` as ``/``, ``file://`` dropped, ``.`` and
``..`` resolved): a relative path is the same place as any path it ends (``notes.txt`` is
``/home/dana/notes.txt``), and a directory holds every place under it (a read of ``docs``
reads ``docs/notes.txt``, and a file in a marked directory is marked). ``url``, ``link`` and
``page`` are one family, read without scheme, user, ``www.``, default port, query and
fragment, an internationalised host as its ASCII form, percent-escapes decoded and dot
segments resolved.

At most ``MAX_MARKS`` marks are kept per user. Past that the record is full, and fails
closed: every place is read as marked (output untrusted) until the marks made before it
would have expired.
"""

from __future__ import annotations

import os
import posixpath
import time
import unicodedata
import weakref
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from toolpass.store import MemoryStore, Store
from toolpass.toolkit.provenance import destination_values

#: How many places one user may have marked at once; past it every place reads as marked.
MAX_MARKS = 10_000
#: Kinds whose values are paths, and links.
PATH_KINDS = frozenset({"file", "path", "directory", "folder"})
URL_KINDS = frozenset({"url", "link", "page"})
#: The most characters of a place's normalised value kept (longer values are cut, then
#: compared), and of a value read: a longer one is read as naming any place.
MAX_VALUE = 4096
MAX_READ = 16 * MAX_VALUE
FULL = "(more places were marked than toolpass keeps: every place reads as marked)"

_memory: weakref.WeakKeyDictionary[object, MemoryStore] = weakref.WeakKeyDictionary()

#: A place named by a call: (kind, normalised value, the value as written).
Named = tuple[str, str, str]


def checked_places(
    tool: str, places: Mapping[str, str] | None, arguments: Collection[str]
) -> tuple[tuple[str, str], ...]:
    """``places=`` checked against the tool's ``arguments``: (argument, kind) pairs."""
    if places is None:
        return ()
    if not isinstance(places, Mapping):
        raise TypeError(f"{tool}: places maps an argument to the kind of place it names")
    found = []
    for argument, kind in places.items():
        if argument not in arguments:
            raise TypeError(f"{tool}: places names {argument!r}, which it does not take")
        if not isinstance(kind, str) or not kind.strip():
            raise TypeError(f"{tool}: places[{argument!r}] is a kind of place like 'file'")
        found.append((argument, kind.strip().casefold()))
    return tuple(found)


def named(places: Iterable[tuple[str, str]], arguments: Mapping[str, Any]) -> list[Named]:
    """The places a call's ``arguments`` name (a list or a mapping of them: each)."""
    return [
        (kind, normal(kind, text), text[:200])
        for argument, kind in places
        for text in destination_values(_paths_as_text(arguments.get(argument)))
        if text.strip()
    ]


def _paths_as_text(value: Any) -> Any:
    """``value`` with each ``os.PathLike`` in it (a ``pathlib`` path) as its text."""
    if isinstance(value, os.PathLike):
        return os.fsdecode(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_paths_as_text(item) for item in value]
    return value


def family(kind: str) -> str:
    """The family of a kind of place: kinds of one family name the same places."""
    return "file" if kind in PATH_KINDS else "url" if kind in URL_KINDS else kind


def normal(kind: str, value: str) -> str:
    """``value`` as a place of ``kind`` is known (see the module's docstring): normalised
    first, then cut to ``MAX_VALUE`` characters (a path keeps its end, as a relative path)."""
    if len(value) > MAX_READ:  # more than a place's name: it may name any place
        return "/" if kind in PATH_KINDS else value[:MAX_VALUE]
    text = " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    if kind in URL_KINDS:
        return _link(text)[:MAX_VALUE]
    if kind not in PATH_KINDS:
        return (text.rstrip("/") or text)[:MAX_VALUE]
    text = text.replace("\\", "/").removeprefix("file://")
    text = posixpath.normpath(text) if text else text
    text = "/" + text.lstrip("/") if text.startswith("/") else text.removeprefix("./")
    return text if len(text) <= MAX_VALUE else text[-MAX_VALUE:].partition("/")[2]


def _link(text: str) -> str:
    """A link without scheme, user, ``www.``, default port, query and fragment, its path's
    escapes decoded and dot segments resolved."""
    from urllib.parse import unquote  # here: import toolpass does not load it

    text = text.partition("#")[0].partition("?")[0]
    text = text.partition("://")[2] if "://" in text else text.removeprefix("//")
    host, _, path = text.partition("/")
    host = host.rpartition("@")[2].removeprefix("www.")
    host = _ascii_host(host.removesuffix(":443").removesuffix(":80").rstrip("."))
    path = posixpath.normpath("/" + unquote(path)).lstrip("/")
    return f"{host}/{path}".rstrip("/")


def _ascii_host(host: str) -> str:
    """An internationalised host name as its ASCII (punycode) form, which also names it."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".", "..", "~")]


def same(kind: str, one: str, other: str) -> bool:
    """Whether two normalised values may name the same place of ``kind``, or one hold the
    other (a directory and a path under it)."""
    if one == other:
        return True
    if kind not in PATH_KINDS:
        return False
    short, long = sorted((_parts(one), _parts(other)), key=len)
    if one.startswith("/") and other.startswith("/"):
        return long[: len(short)] == short  # one under the other
    # A relative path may start anywhere: it is held if its parts run together in the other.
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def store_of(toolkit: object, shared: Store | None) -> Store:
    """Where the marks of ``toolkit``'s users are: its shared store, else its own memory."""
    if shared is not None:
        return shared
    found = _memory.get(toolkit)
    if found is None:
        found = _memory.setdefault(toolkit, MemoryStore())
    return found


def _key(user: str) -> str:
    import hashlib  # here: OpenSSL's load is paid on first use, not by ``import toolpass``

    return "places:" + hashlib.sha256(user.encode()).hexdigest()[:32]


def _live(state: Any, now: float) -> dict[str, Any]:
    """The marks of ``state`` that have not expired."""
    if not isinstance(state, dict):
        return {"marks": [], "full_until": 0.0}
    marks = [m for m in state.get("marks", []) if m[4] > now]
    return {"marks": marks, "full_until": float(state.get("full_until", 0.0))}


def marked(store: Store, user: str, places: list[Named]) -> tuple[Named, str] | None:
    """The first of ``places`` marked for ``user``, and why it was; None when none is."""
    now = time.time()
    state = _live(store.get(_key(user)), now)
    if state["full_until"] > now:
        return places[0], FULL
    for place in places:
        kind, value, _ = place
        for mark_kind, mark_value, _shown, why, _expires in state["marks"]:
            if family(mark_kind) == family(kind) and same(family(kind), value, mark_value):
                return place, str(why)
    return None


def mark(store: Store, user: str, places: list[Named], why: str, ttl: float) -> None:
    """Mark ``places`` for ``user`` for ``ttl`` seconds, saying ``why``."""
    now = time.time()
    # The record is kept as long as its longest mark (a toolkit sharing the store may keep
    # its marks longer than this one).
    held = _live(store.get(_key(user)), now)
    longest = max([ttl, held["full_until"] - now, *(m[4] - now for m in held["marks"])])

    def change(state: Any) -> tuple[dict[str, Any], None]:
        state = _live(state, now)
        marks = [m for m in state["marks"] if not any(_is(m, p) for p in places)]
        marks += [[kind, value, shown, why[:300], now + ttl] for kind, value, shown in places]
        if len(marks) > MAX_MARKS:
            state["full_until"] = max(state["full_until"], now + ttl)
            marks = state["marks"]
        state["marks"] = marks
        return state, None

    store.update(_key(user), change, ttl=longest)


def _is(mark: list[Any], place: Named) -> bool:
    return bool(family(mark[0]) == family(place[0]) and mark[1] == place[1])
