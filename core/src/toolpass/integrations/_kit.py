"""The preludes every check wrote by hand, written once.

- :class:`Cache`: one typed, expiring cache per kind of value (a user's roles, a team's
  members), its lifetime read from the connection's options, with :meth:`Cache.get` loading
  what it does not hold.
- :func:`paged`: one paginator for the styles systems use: ``offset`` (``limit``/``offset``
  and a ``more`` flag), ``cursor`` (a cursor in the body sent back as a parameter),
  ``next_url`` (the next page's URL in the body) and ``link`` (RFC 8288 ``Link: <...>;
  rel="next"``); a next page's URL must be on the connection's URL.
- :class:`IssuedToken`: a token the engine is issued (OAuth client credentials, a JWT
  exchange): fetched once at a time under its lock, kept until shortly before it expires
  (:func:`~toolpass.integrations.base.issued_token`), dropped when the system rejects it.
- :func:`target`: a resource ``kind:id`` parsed against the kinds its action declares in
  ``actions.json`` (``{"kinds": {kind: id pattern or null}, "actions": [...]}``, read by
  :func:`~toolpass.integrations.base.load_actions`); a malformed one is answered
  ``unknown`` (cause ``resource``) naming what the action takes.
- :class:`UserIds` and :func:`mapped_user`: the shape of a system's user ids, declared once;
  a user mapped to anything else is ``unknown`` (cause ``identity``).
"""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlencode

from toolpass.integrations.base import (
    Action,
    Decision,
    Integration,
    LookupFailed,
    Remembered,
    issued_token,
)

__all__ = [
    "Cache",
    "IssuedToken",
    "Target",
    "UserIds",
    "mapped_user",
    "paged",
    "target",
    "token_from",
    "ttl_option",
]

K = TypeVar("K")
V = TypeVar("V")
Style = Literal["offset", "cursor", "next_url", "link"]
_NEXT_LINK = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?(?=[\s;,]|$)', re.I)


# --- caches ------------------------------------------------------------------------------
class Cache(Generic[K, V]):
    """One kind of value (None too), kept by key for the lifetime ``ttl()`` answers (0: not
    kept); never answered from inside a check asked with ``fresh=True``."""

    def __init__(self, ttl: Callable[[], float], size: int = 5000) -> None:
        self._ttl = ttl
        self._kept: Remembered[K, tuple[V]] = Remembered(size)

    def get(self, key: K, load: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``load()``'s, kept."""
        hit = self._kept.get(key)
        if hit is not None:
            return hit[0]
        value = load()
        self._kept.put(key, (value,), self._ttl())
        return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``."""
        self._kept.put(key, (value,), self._ttl())

    def clear(self) -> None:
        """Forget everything."""
        self._kept.clear()


def ttl_option(options: Mapping[str, Any], key: str, default: float) -> Callable[[], float]:
    """A lifetime read from the connection's option ``key`` (``default`` when unset)."""
    return lambda: float(options.get(key, default))


# --- the paginator -----------------------------------------------------------------------
def paged(
    system: Integration,
    path: str,
    *,
    what: str,
    items: str,
    style: Style,
    params: Mapping[str, str] | None = None,
    size: int = 100,
    size_param: str = "limit",
    pages: int = 20,
    too_many: str,
    cursor: str = "cursor",
    next_at: str = "next",
) -> Iterator[Any]:
    """The items (the list at key ``items`` of each page) of the list at ``path``, read
    page by page in ``style``, at most ``pages`` pages (then :class:`LookupFailed` with
    ``too_many``, never a guess); a next page's URL must be on the connection's URL (the
    engine's credential goes nowhere else). ``size`` items a page are asked for with ``size_param``
    (``offset`` and ``cursor`` styles); ``cursor`` names the cursor parameter; ``next_at``
    is the dotted path of the next cursor or URL in a page's body."""
    base = dict(params or {})

    def page(token: str | None) -> tuple[list[Any], str | None]:
        query: dict[str, str | None] = dict(base)
        where = path
        if style == "offset":
            query |= {size_param: str(size), "offset": token or "0"}
        elif style == "cursor":
            query |= {size_param: str(size), cursor: token or None}
        elif token:
            if not token.startswith(system.config.url.rstrip("/") + "/"):
                raise LookupFailed(f"{system.name}'s next page for {what} is on another host")
            where, query = token, {}
        if style == "link":
            answer = system.answer("GET", where, what=what, params=query)
            if answer.status != 200:
                raise system.failure(answer, what)
            data, after = system.parse(answer, what), _next_link(answer.header("link"))
        else:
            data = system.get_json(where, what=what, params=query)
            after = None
        found = data.get(items)
        if not isinstance(found, list):
            raise LookupFailed(f"{system.name}'s answer to {what} has no {items} list")
        if style == "offset":
            offset = int(token or 0) + len(found)
            after = str(offset) if data.get("more") and found else None
        elif style != "link":
            after = _dotted(system, data, next_at, what)
        return found, after

    return system.pages(page, limit=pages, too_many=too_many)


def _dotted(system: Integration, data: Any, path: str, what: str) -> str | None:
    """The string at the dotted ``path`` of ``data``: None when absent or empty,
    :class:`LookupFailed` when it is there but not a string (never a silent last page)."""
    for part in path.split("."):
        if data is None:
            return None
        if not isinstance(data, dict):
            raise LookupFailed(f"{system.name}'s answer to {what} has a malformed {path}")
        data = data.get(part)
    if data is None or data == "":
        return None
    if not isinstance(data, str):
        raise LookupFailed(f"{system.name}'s answer to {what} has a malformed {path}")
    return data


def _next_link(header: str | None) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header."""
    found = _NEXT_LINK.search(header or "")
    return found.group(1) if found else None


# --- issued tokens -----------------------------------------------------------------------
class IssuedToken:
    """The token ``fetch`` issues the engine, as ``(token, when to refresh it)`` on the
    ``time.monotonic()`` clock: one fetch at a time (callers meanwhile wait for its
    token), kept on ``owner.issued`` (so reasons never carry it) until it is due."""

    def __init__(self, owner: Integration, fetch: Callable[[], tuple[str, float]]) -> None:
        self._owner = owner
        self._fetch = fetch
        self._lock = threading.RLock()  # a fetch that fails may drop the held token

    def get(self) -> str:
        """A token that is not due for refresh, fetched when there is none."""
        with self._lock:
            held = self._owner.issued
            if held is not None and time.monotonic() < held[1]:
                return held[0]
            self._owner.issued = self._fetch()
            return self._owner.issued[0]

    def drop(self, token: str) -> None:
        """Forget ``token`` (the system rejected it), unless a newer one replaced it."""
        with self._lock:
            if self._owner.issued is not None and self._owner.issued[0] == token:
                self._owner.issued = None


def token_from(
    system: Integration,
    path: str,
    form: Mapping[str, str],
    *,
    who: str,
    what: str = "issue an access token (client credentials)",
    basic: tuple[str, str] | None = None,
) -> tuple[str, float]:
    """An OAuth token endpoint's answer to a form POST to ``path`` (a full URL or one
    relative to the connection), as :func:`issued_token` reads it; ``basic``: the client's
    id and secret sent as HTTP Basic authentication (else they are in ``form``)."""
    sent = {"Content-Type": "application/x-www-form-urlencoded"}
    if basic is not None:
        pair = base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode("ascii")
        sent["Authorization"] = f"Basic {pair}"
    body = urlencode(form).encode()
    answer = system.answer("POST", path, what=what, body=body, headers=sent)
    if answer.status != 200:
        raise system.failure(answer, what)
    return issued_token(system.parse(answer, what), who)


# --- resources ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Target:
    """A resource as its action takes it: its ``kind`` and ``id`` ("" for a kind of one)."""

    kind: str
    id: str


def target(action: Action, resource: str) -> Target | Decision:
    """``resource`` as ``kind:id`` against the kinds ``action`` declares (``terms["kinds"]``,
    a kind -> id pattern mapping; a kind whose pattern is None is written alone, without
    ``:``), or an
    ``unknown`` decision naming the kinds it takes."""
    kinds: Mapping[str, re.Pattern[str] | None] = action.terms.get("kinds") or {}
    kind, sep, oid = resource.partition(":")
    if kind in kinds:
        pattern = kinds[kind]
        if (pattern is None and not sep) or (pattern is not None and pattern.fullmatch(oid)):
            return Target(kind, oid)
    where = " or ".join(k if p is None else f"{k}:ID" for k, p in kinds.items())
    return Decision.unknown(
        f"{action.name} is asked on {where}, not {resource!r}", cause="resource"
    )


# --- identity ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class UserIds:
    """What a system's user ids look like: ``pattern``, and ``noun`` for the reason
    ("a PagerDuty user id")."""

    pattern: re.Pattern[str]
    noun: str


def mapped_user(system: Integration, user: str, ids: UserIds) -> str | Decision:
    """The system user ``user`` maps to, or an ``unknown`` decision (cause ``identity``)
    when it is not shaped as ``ids`` says."""
    uid = system.user_id(user)
    if ids.pattern.fullmatch(uid):
        return uid
    return Decision.unknown(f"{user} maps to {uid!r}, not {ids.noun}", cause="identity")
