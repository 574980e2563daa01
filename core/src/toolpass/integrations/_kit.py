"""The preludes every check wrote by hand, written once.

- :func:`asked`: the prelude of a check, written once: the declared action (else
  ``unknown``, cause ``resource``), its :func:`target` and the :func:`mapped_user`, as one
  :class:`Asked` or the ``unknown`` decision; each step is also a function of its own
  (:func:`known_action`, :func:`target`, :func:`mapped_user`) for checks that interleave.
- :class:`Cache`: one typed, expiring cache per kind of value (a user's roles, a team's
  members), its lifetime read from the connection's option that :func:`ttl_key` declares
  (:meth:`Cache.option`, :func:`lifetime`: the key's default, never repeated), with
  :meth:`Cache.get` loading what it does not hold. The engine refuses a negative lifetime
  (the key's ``minimum``), so no system validates its own.
- :func:`paged`: one paginator for the styles systems use: ``offset`` (``limit``/``offset``
  and a ``more`` flag), ``cursor`` (a cursor or page token in the body sent back as a
  parameter), ``next_url`` (the next page's URL or path in the body: ``next``,
  ``@odata.nextLink``, ``nextRecordsUrl``), ``link`` (RFC 8288 ``Link: <...>;
  rel="next"``) and ``page`` (page numbers: until a short page, a total, or as a header
  says); a next page's URL must be on the system's URL.
- :class:`IssuedToken`: a token the engine is issued (OAuth client credentials, a JWT
  exchange): fetched once at a time under its lock, kept until shortly before it expires
  (:func:`~toolpass.integrations.base.issued_token`), dropped when the system rejects it.
- :func:`target`: a resource ``kind:id`` parsed against the kinds its action declares in
  ``actions.json`` (``{"kinds": {kind: id pattern or null}, "actions": [...]}``, read by
  :func:`~toolpass.integrations.base.load_actions`); a malformed one is answered
  ``unknown`` (cause ``resource``) naming what the action takes.
- :class:`UserIds` and :func:`mapped_user`: the shape of a system's user ids, declared once;
  a user mapped to anything else is ``unknown`` (cause ``identity``).
- :func:`declared`: a table a system declares in its ``actions.json`` beside its actions
  (PagerDuty's role -> level maps); what an action needs is a column of its row.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlencode

from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    Remembered,
    issued_token,
)

__all__ = [
    "Absent",
    "Asked",
    "Cache",
    "IssuedToken",
    "Target",
    "UserIds",
    "asked",
    "declared",
    "kinds_of",
    "known_action",
    "lifetime",
    "mapped_user",
    "paged",
    "target",
    "token_from",
    "ttl_key",
]

K = TypeVar("K")
V = TypeVar("V")
Style = Literal["offset", "cursor", "next_url", "link", "page"]
_NEXT_LINK = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?(?=[\s;,]|$)', re.I)


# --- caches ------------------------------------------------------------------------------
class Cache(Generic[K, V]):
    """One kind of value (None too, unless ``keep_none`` is off: then a None is asked again
    next time), kept by key for the lifetime ``ttl()`` answers (0: not kept); never answered
    from inside a check asked with ``fresh=True``."""

    def __init__(self, ttl: Callable[[], float], size: int = 5000, *, keep_none: bool = True):
        self._ttl = ttl
        self._keep_none = keep_none
        self._kept: Remembered[K, tuple[V]] = Remembered(size)

    def get(self, key: K, load: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``load()``'s, kept."""
        hit = self._kept.get(key)
        if hit is not None:
            return hit[0]
        value = load()
        if value is not None or self._keep_none:
            self._kept.put(key, (value,), self._ttl())
        return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``."""
        self._kept.put(key, (value,), self._ttl())

    def clear(self) -> None:
        """Forget everything."""
        self._kept.clear()

    @classmethod
    def option(
        cls, system: Integration, key: str, size: int = 5000, *, keep_none: bool = True
    ) -> Cache[K, V]:
        """A cache whose lifetime is ``system``'s option ``key`` (:func:`lifetime`)."""
        return cls(lifetime(system, key), size, keep_none=keep_none)


def ttl_key(prefix: str, what: str, default: float, *, kept: str = "are kept") -> ConfigKey:
    """The option ``<prefix>_cache_ttl``: "Seconds ``what`` ``kept`` (0: never).", at least
    0 seconds (the engine refuses less), ``default`` when unset."""
    return ConfigKey(
        f"{prefix}_cache_ttl",
        f"Seconds {what} {kept} (0: never).",
        default=default,
        minimum=0.0,
        unit="seconds",
    )


def lifetime(system: Integration, key: str) -> Callable[[], float]:
    """A lifetime read from ``system``'s option ``key``, the default its declared
    :class:`ConfigKey` gives when unset (ValueError: ``key`` is not declared)."""
    declared_key = next((k for k in type(system).keys if k.name == key), None)
    if declared_key is None:
        raise ValueError(f"{system.name} declares no option {key}")
    options, default = system.options, declared_key.default
    return lambda: float(options.get(key, default))


# --- the paginator -----------------------------------------------------------------------
class Absent(LookupFailed):
    """The list asked with ``absent=True`` is not there: its first page answered 404."""


def paged(
    system: Integration,
    path: str,
    *,
    what: str,
    too_many: str,
    style: Style,
    items: str | None,
    params: Mapping[str, str | None] | None = None,
    pages: int = 20,
    size: int = 100,
    size_param: str | None = "limit",
    cursor: str = "cursor",
    next_at: str | tuple[str, ...] = "next",
    more_at: str | None = None,
    total_at: str | None = None,
    next_header: str | None = None,
    done_at: str | None = None,
    origin: str | None = None,
    each: type = object,
    optional: bool = False,
    absent: bool = False,
    headers: Mapping[str, str] | None = None,
    get: Callable[..., Any] | None = None,
) -> Iterator[Any]:
    """The items of the list at ``path``, read page by page in ``style``, at most ``pages``
    pages (then :class:`LookupFailed` with ``too_many``, never a guess).

    Each page's items are the list at the dotted path ``items`` of its body (None: the body
    is the list; ``optional``: a body without it has none), each an ``each`` (else the
    list fails). ``size`` items a page are asked for with ``size_param`` (None: not asked).
    The styles:

    - ``offset``: ``size_param``/``offset`` parameters, more pages while the flag at
      ``more_at`` (default ``more``) is true (PagerDuty).
    - ``cursor``: the cursor at ``next_at`` (a dotted path, or a tuple of keys) sent back as
      parameter ``cursor`` (Slack's ``next_cursor``, Google's ``nextPageToken``, AWS's
      ``NextToken``; with ``more_at``, only while that flag is true: GraphQL's
      ``pageInfo``). A ``get`` may send the parameters in a request body instead.
    - ``next_url``: the next page's URL at ``next_at``; one written as a path (``/...``) is
      on ``origin``; ``done_at`` names a flag true on the last page (Salesforce's ``done``:
      a page not done without a next URL fails).
    - ``link``: RFC 8288 ``Link: <...>; rel="next"``.
    - ``page``: page numbers (1, 2, ...) in ``cursor``, ``size`` items a page; more pages
      while a page is full, or while fewer than the total at ``total_at`` were asked, or as
      the header ``next_header`` says (GitLab's ``X-Next-Page``).

    A next page's URL must be on ``origin`` (default: the connection's URL), so the
    engine's credential goes nowhere else. ``get(url, what=, params=, absent=)`` reads a
    page's JSON body (default :meth:`Integration.get_json`, with ``headers``); with
    ``absent``, a first page answering 404 raises :class:`Absent`."""
    base = dict(params or {})
    home = (origin or system.config.url).rstrip("/")
    read = get or partial(system.get_json, headers=headers, kind=None)

    def body(where: str, query: Mapping[str, str | None], first: bool) -> tuple[Any, str | None]:
        if style == "link" or next_header:
            answer = system.answer("GET", where, what=what, params=query, headers=headers)
            if answer.status == 404 and absent and first:
                raise Absent(f"{system.name} has no list to {what}")
            if answer.status != 200:
                raise system.failure(answer, what)
            said = answer.header("link" if style == "link" else next_header or "") or ""
            return system.parse(answer, what, None), said
        data = read(where, what=what, params=query, absent=(404,) if absent and first else ())
        if data is None:
            raise Absent(f"{system.name} has no list to {what}")
        return data, None

    def page(token: str | None) -> tuple[list[Any], str | None]:
        query: dict[str, str | None] = dict(base)
        where = path
        if size_param is not None and style in ("offset", "cursor", "page"):
            query[size_param] = str(size)
        if style == "offset":
            query["offset"] = token or "0"
        elif style in ("cursor", "page"):
            query[cursor] = token or ("1" if style == "page" else None)
        elif token:
            where, query = token, {}
        data, said = body(where, query, token is None)
        found = _items(system, data, items, what, optional)
        if not all(isinstance(item, each) for item in found):
            raise LookupFailed(f"{system.name}'s answer to {what} has a malformed item")
        return found, following(data, found, token, said)

    def following(data: Any, found: list[Any], token: str | None, said: str | None) -> str | None:
        """The next page's token: an offset, a page number, a cursor or a URL."""
        if style == "offset":
            more = bool(_at(data, more_at or "more"))
            return str(int(token or 0) + len(found)) if more and found else None
        if style == "page":
            return _next_page(system, int(token or 1), size, data, found, total_at, said, what)
        if done_at is not None and _at(data, done_at) is not False:
            return None
        if more_at is not None and not _at(data, more_at):
            return None
        url = _next_link(said) if style == "link" else _dotted(system, data, next_at, what)
        if (done_at or more_at) is not None and not url:
            raise LookupFailed(f"{system.name}'s answer to {what} is cut without a next page")
        return _on(system, home, url, what) if url and style != "cursor" else url

    return system.pages(page, limit=pages, too_many=too_many)


def _items(
    system: Integration, data: Any, items: str | None, what: str, optional: bool
) -> list[Any]:
    """A page's items: its body, or the list at its key ``items`` (``optional``: [] when
    the body has none)."""
    found = data if items is None else _at(data, items)
    if found is None and optional and isinstance(data, dict):
        return []
    if not isinstance(found, list):
        raise LookupFailed(f"{system.name}'s answer to {what} has no {items or 'item'} list")
    return found


def _at(data: Any, path: str) -> Any:
    """The value at the dotted ``path`` of ``data``, None when any step is missing."""
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _next_page(
    system: Integration,
    number: int,
    size: int,
    data: Any,
    found: list[Any],
    total_at: str | None,
    said: str | None,
    what: str,
) -> str | None:
    """The page after page ``number``: as the header ``said``, while fewer than the total
    at ``total_at`` were asked, or while pages are full."""
    if said is not None:
        said = said.strip()
        if said and not said.isdigit():
            raise LookupFailed(f"{system.name}'s next page number for {what} is not a number")
        return said or None
    if total_at is not None:
        total = data.get(total_at) if isinstance(data, dict) else None
        if not isinstance(total, int):
            raise LookupFailed(f"{system.name}'s answer to {what} has no {total_at}")
        return str(number + 1) if number * size < total and found else None
    return str(number + 1) if len(found) == size else None


def _on(system: Integration, home: str, url: str, what: str) -> str:
    """``url`` (a path: on ``home``), if it is on ``home``."""
    if url.startswith("/") and not url.startswith("//"):
        return home + url
    if not url.startswith(home + "/"):
        raise LookupFailed(
            f"{system.name}'s next page for {what} links to another origin (another host, "
            "scheme or port)"
        )
    return url


def _dotted(system: Integration, data: Any, path: str | tuple[str, ...], what: str) -> str | None:
    """The string at ``path`` (dotted, or a tuple of keys) of ``data``: None when absent or
    empty, :class:`LookupFailed` when it is there but not a string (never a silent last
    page)."""
    keys = path.split(".") if isinstance(path, str) else path
    named = ".".join(keys)
    for part in keys:
        if data is None:
            return None
        if not isinstance(data, dict):
            raise LookupFailed(f"{system.name}'s answer to {what} has a malformed {named}")
        data = data.get(part)
    if data is None or data == "":
        return None
    if not isinstance(data, str):
        raise LookupFailed(f"{system.name}'s answer to {what} has a malformed {named}")
    return data


def _next_link(header: str | None) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header."""
    found = _NEXT_LINK.search(header or "")
    return found.group(1) if found else None


# --- issued tokens -----------------------------------------------------------------------
class IssuedToken:
    """The token ``fetch`` issues the engine, as ``(token, when to refresh it)`` on the
    owner's ``clock``: one fetch at a time (callers meanwhile wait for its
    token), kept on ``owner.issued`` (so reasons never carry it) until it is due."""

    def __init__(self, owner: Integration, fetch: Callable[[], tuple[str, float]]) -> None:
        self._owner = owner
        self._fetch = fetch
        self._lock = threading.RLock()  # a fetch that fails may drop the held token

    def get(self) -> str:
        """A token that is not due for refresh, fetched when there is none."""
        with self._lock:
            held = self._owner.issued
            if held is not None and self._owner.clock() < held[1]:
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
    return issued_token(system.parse(answer, what), who, system.clock)


# --- tables beside the actions -------------------------------------------------------------
def declared(package: str, key: str) -> Any:
    """The table ``key`` that the system ``package`` declares in its ``actions.json`` beside
    its actions and kinds (a role -> level map, a state table); ValueError when absent."""
    from importlib import resources

    text = resources.files(package).joinpath("actions.json").read_text("utf-8")
    table = json.loads(text)
    if not isinstance(table, dict) or key not in table:
        raise ValueError(f"{package}/actions.json declares no {key}")
    return table[key]


def kinds_of(package: str) -> Mapping[str, re.Pattern[str] | None]:
    """Every resource kind ``package``'s ``actions.json`` declares, its id pattern compiled
    (for a resource read before its action is known)."""
    kinds: dict[str, str | None] = declared(package, "kinds")
    return {kind: None if p is None else re.compile(p) for kind, p in kinds.items()}


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


def mapped_user(system: Integration, user: str, ids: UserIds | None) -> str | Decision:
    """The system user ``user`` maps to, or an ``unknown`` decision (cause ``identity``)
    when it is not shaped as ``ids`` says (None: any shape)."""
    uid = system.user_id(user)
    if ids is None or ids.pattern.fullmatch(uid):
        return uid
    return Decision.unknown(f"{user} maps to {uid!r}, not {ids.noun}", cause="identity")


# --- the prelude -------------------------------------------------------------------------
def known_action(system: Integration, action: str) -> Action | Decision:
    """The action ``system`` declares as ``action``, or an ``unknown`` decision (cause
    ``resource``)."""
    found = system.action(action)
    if found is None:
        return Decision.unknown(f"{system.name} has no action {action!r}", cause="resource")
    return found


@dataclass(frozen=True, slots=True)
class Asked:
    """What a check is asked, validated: the declared ``action``, the resource it is asked
    ``on``, and the system user ``uid`` ("" when the user is not mapped yet)."""

    action: Action
    on: Target
    uid: str

    @property
    def terms(self) -> Mapping[str, Any]:
        """The action's own columns in ``actions.json``."""
        return self.action.terms


def asked(
    system: Integration,
    action: str,
    resource: str,
    user: str | None = None,
    ids: UserIds | None = None,
) -> Asked | Decision:
    """The check's prelude: :func:`known_action`, then :func:`target`, then (unless
    ``user`` is None) :func:`mapped_user` against ``ids``; the first ``unknown`` answer, or
    what was asked. A :class:`LookupFailed` of the identity look-up propagates."""
    found = known_action(system, action)
    if isinstance(found, Decision):
        return found
    on = target(found, resource)
    if isinstance(on, Decision):
        return on
    uid = "" if user is None else mapped_user(system, user, ids)
    if isinstance(uid, Decision):
        return uid
    return Asked(found, on, uid)
