"""The integration kit: the contract every integration fulfils, and what each one shares.

A subclass declares ``name``, ``description``, ``keys`` (its own configuration keys),
``actions`` (a table of data: :func:`load_actions` reads ``actions.json`` beside the module
that names the system), ``routes`` (added to the shipped ``routes.json`` there)
and ``default_url``, and implements :meth:`Integration.check` and :meth:`Integration.probe`
against the system's documented API. The kit gives it the rest:

- :meth:`Integration.fetch_json` / :meth:`Integration.get_json`: one request with the
  connection's URL, credential (:meth:`Integration.auth_headers`), TLS, proxy and time
  budget, whose answer is parsed JSON of the expected shape, or :class:`LookupFailed` with a
  precise reason for each failure (401, 403, 404, 429, 3xx, 5xx, slow, non-JSON, TLS, proxy,
  unreachable); an integration adds its own error bodies with
  :meth:`Integration.error_detail` and its own in-band failures (Slack's ``"ok": false``)
  with :meth:`Integration.accept`. No reason ever carries one of the connection's secrets.
- :meth:`Integration.pages`: a list read page by page, bounded.
- identity: the shared modes come from ``wire.identity``; a system's own look-ups are
  methods ``lookup_<mode>`` for each mode listed in ``identity_modes``.
- :class:`Remembered`: a small, bounded, thread-safe cache with lifetimes, which a check
  asked with ``fresh=True`` never answers from (it stores what that check learns).
- :func:`asking_fresh`: whether the check under way was asked with ``fresh=True``; an
  integration's own cache that is not a :class:`Remembered` consults it (the identity
  look-ups already do).
- :meth:`Integration.cache_scope`: what tells this connection's system apart from another
  deployment's connection of the same name, in the decision cache's key.

Failures are raised as :class:`LookupFailed`; the engine turns them into ``unknown``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json as jsonlib
import re
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Literal, TypeVar
from urllib.parse import urlencode, urlsplit

from toolpass.integrations.routes import Match, Request, Route, RouteTable, load
from toolpass.wire import budget
from toolpass.wire.decision import Decision
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.fresh import asking_fresh, fresh_lookups
from toolpass.wire.http import HTTPClient, HTTPError, MalformedResponse, NetOptions, Response
from toolpass.wire.identity import IdentityResolver
from toolpass.wire.keys import ConfigKey, ConnectionConfig
from toolpass.wire.secrets import Secret

__all__ = [
    "Action",
    "ConfigKey",
    "ConnectionConfig",
    "Decision",
    "Effect",
    "Integration",
    "LookupFailed",
    "MalformedResponse",
    "ProbeResult",
    "Remembered",
    "Route",
    "asking_fresh",
    "fresh_lookups",
    "load_actions",
]

Effect = Literal["read", "write", "destructive"]
EFFECTS: tuple[Effect, ...] = ("read", "write", "destructive")
REDACTED = "[redacted]"
K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Action:
    """An action a user may be allowed: ``requires`` says what the system requires for it;
    ``terms`` holds what the integration's own check reads for it (from the table's other
    columns)."""

    name: str
    description: str
    effect: Effect
    requires: str = ""
    terms: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


_ACTION_COLUMNS = ("name", "effect", "description", "requires")


def load_actions(package: str) -> tuple[Action, ...]:
    """The action table ``actions.json`` of the integration package ``package`` (its
    ``__name__``): a list of rows with ``name``, ``effect``, ``description``, ``requires`` and
    the integration's own columns (its ``terms``); or ``{"kinds": ..., "actions": [...]}``
    declaring the resource kinds its rows name (:func:`_declared_kinds`)."""
    where = f"{package}/actions.json"
    table = jsonlib.loads(resources.files(package).joinpath("actions.json").read_text("utf-8"))
    rows = table if isinstance(table, list) else _declared_kinds(table, where)
    actions: list[Action] = []
    for row in rows:
        name, effect, description, requires = (row.get(c) for c in _ACTION_COLUMNS)
        if not (isinstance(name, str) and name and isinstance(description, str)):
            raise ValueError(f"{where}: a row without a name or description")
        if effect not in EFFECTS or not isinstance(requires, str):
            raise ValueError(f"{where}: {name}: bad effect or requires")
        terms = {k: v for k, v in row.items() if k not in _ACTION_COLUMNS}
        actions.append(Action(name, description, effect, requires, MappingProxyType(terms)))
    if len({a.name for a in actions}) != len(actions):
        raise ValueError(f"{where} names an action twice")
    return tuple(actions)


def _declared_kinds(table: Any, where: str) -> list[Any]:
    """The rows of an ``actions.json`` that declares its resource kinds: ``{"kinds": {kind:
    id pattern, or null for a kind without ids}, "actions": [...]}``; each row's ``kinds``
    list becomes a kind -> compiled pattern mapping (read by ``_kit.target``)."""
    kinds = table.get("kinds") if isinstance(table, dict) else None
    rows = table.get("actions") if isinstance(table, dict) else None
    if not isinstance(kinds, dict) or not isinstance(rows, list):
        raise ValueError(f"{where}: expected a list of actions, or kinds and actions")
    patterns = {k: None if p is None else re.compile(p) for k, p in kinds.items()}
    for row in rows:
        named = row.get("kinds") if isinstance(row, dict) else None
        if named is not None:
            if not isinstance(named, list) or not set(named) <= patterns.keys():
                raise ValueError(f"{where}: {row.get('name')}: a kind missing from kinds")
            row["kinds"] = MappingProxyType({k: patterns[k] for k in named})
    return rows


def issued_token(
    data: Any, who: str, clock: Callable[[], float] = time.monotonic
) -> tuple[str, float]:
    """An OAuth token endpoint's answer as ``(access token, when to refresh it)`` on
    ``clock``: a minute before it expires, or a tenth of its lifetime early
    for short ones (an hour when ``expires_in`` is missing); ``LookupFailed`` naming ``who``
    when the answer holds no token or an expired one."""
    token = data.get("access_token") if isinstance(data, dict) else None
    lifetime = data.get("expires_in") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise LookupFailed(f"{who} answered without access_token")
    if isinstance(lifetime, bool) or not isinstance(lifetime, (int, float)):
        lifetime = 3600
    if lifetime <= 0:
        raise LookupFailed(f"{who} issued an expired token")
    return token, clock() + lifetime - min(60.0, lifetime / 10)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Whether a connection's credential works, live, and what was seen."""

    ok: bool
    detail: str


class Remembered(Generic[K, V]):
    """A thread-safe map whose entries expire; the oldest goes first past ``size``."""

    def __init__(self, size: int = 10_000) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value kept for ``key`` if it has not expired, else ``default`` (always
        ``default`` inside a check asked with ``fresh=True``)."""
        if asking_fresh():
            return default
        with self._lock:
            hit = self._items.get(key)
        if hit is None or hit[0] <= time.monotonic():
            return default
        return hit[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (not at all when ``ttl`` is 0)."""
        if ttl <= 0:
            return
        with self._lock:
            self._items[key] = (time.monotonic() + ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class Integration(ABC):
    """One system. Constructed by the engine from a validated :class:`ConnectionConfig`
    when the engine starts: ``__init__`` makes no request, and raises
    ``ConfigError(message, key)`` for a configuration it cannot work with."""

    name: ClassVar[str]
    description: ClassVar[str]
    keys: ClassVar[tuple[ConfigKey, ...]] = ()
    actions: ClassVar[tuple[Action, ...]] = ()
    routes: ClassVar[tuple[Route, ...]] = ()  # extra routes beside the shipped table
    _action_index: ClassVar[dict[str, Action] | None] = None
    _route_table: ClassVar[RouteTable | None] = None
    default_url: ClassVar[str | None] = None
    #: A token the engine was issued and uses now (``issued_token``: the token, and when to
    #: refresh it), kept out of reasons like the connection's own secrets.
    issued: tuple[str, float] | None = None
    #: The clock ``issued`` tokens are refreshed on (a test may set one it controls).
    clock: Callable[[], float] = time.monotonic
    identity_modes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: ConnectionConfig, http: HTTPClient | None = None) -> None:
        self.config = config
        self.options: Mapping[str, Any] = config.options
        self.http = http or HTTPClient()
        self.identity = IdentityResolver(
            config.identity,
            system=self.name,
            connection=config.id,
            lookup=self.lookup_user if self.identity_modes else None,
            http=self.http,
        )

    def cache_scope(self) -> str:
        """A digest of what this connection asks: its system, URL and settings (the account,
        the organisation, identity mapping; secrets by reference, never by value). Two
        deployments sharing a store share decisions only when it is the same."""
        c = self.config
        material = (self.name, c.url, _stable(c.options), _stable(c.identity))
        return hashlib.sha256(repr(material).encode("utf-8", "surrogatepass")).hexdigest()[:32]

    @classmethod  # noqa: B027 - an optional hook
    def validate(cls, options: Mapping[str, Any]) -> None:
        """Check keys against each other; raise ``ConfigError(message, key)``. Default: none."""

    @classmethod
    def action(cls, name: str) -> Action | None:
        """The declared action called ``name``, or None."""
        index = cls.__dict__.get("_action_index")
        if index is None:
            index = {a.name: a for a in cls.actions}
            cls._action_index = index
        return index.get(name)

    @classmethod
    def tables_package(cls) -> str | None:
        """The package holding the system's tables: that of the module where the class that
        names the system (sets ``name``) is written. A subclass that renames the system ships
        its own tables, or none."""
        namer = next(c for c in cls.__mro__ if "name" in c.__dict__)
        return getattr(sys.modules.get(namer.__module__), "__package__", None) or None

    @classmethod
    def route_table(cls) -> RouteTable:
        """The system's route table: the ``routes.json`` shipped beside the module that names
        the system (:meth:`tables_package`) plus ``routes``, loaded on first use."""
        table = cls.__dict__.get("_route_table")
        if table is None:
            package = cls.tables_package()
            shipped = load(package) if package else RouteTable(())
            table = RouteTable((*shipped.routes, *cls.routes)) if cls.routes else shipped
            cls._route_table = table
        return table

    @functools.cached_property
    def _own(self) -> tuple[str, str, int]:
        """The scheme, host and port of the connection's URL."""
        url = urlsplit(self.config.url)
        scheme = url.scheme.lower()
        host = (url.hostname or "").lower().rstrip(".")
        return scheme, host, url.port or {"http": 80, "https": 443}.get(scheme, 0)

    def serves(self, scheme: str, host: str, port: int) -> bool:
        """Whether requests to this address, other than the connection's URL, belong to this
        connection (AWS serves every regional endpoint of its partition). Default: none."""
        return False

    def match_request(self, request: Request) -> Match | None:
        """The route an outgoing request to this system takes (paths relative to the
        connection's URL), or None. Systems that need more than method and path override it."""
        return self.route_table().match(request)

    @abstractmethod
    def check(self, user: str, action: str, resource: str) -> Decision:
        """May ``user`` (the application's identity, an email) do ``action`` on ``resource``?

        Returns allow or deny when the system answered; raises :class:`LookupFailed`
        (or returns unknown) otherwise. ``action`` is one of :attr:`actions`.
        """

    @abstractmethod
    def probe(self) -> ProbeResult:
        """Ask the system, live, whether the engine's own credential works."""

    def lookup_user(self, email: str, mode: str) -> Sequence[str]:
        """The system users ``email`` may be, by the system's own look-up ``mode``: the
        method ``lookup_<mode>`` (one for each of ``identity_modes``)."""
        found: Callable[[str], Sequence[str]] | None = getattr(self, f"lookup_{mode}", None)
        if mode not in self.identity_modes or found is None:
            raise LookupFailed(f"{self.name} has no identity look-up {mode!r}")
        return found(email)

    def user_id(self, email: str) -> str:
        """The one system user ``email`` maps to (raises :class:`LookupFailed` otherwise)."""
        return self.identity.resolve(email)

    def secret(self, key: str) -> str:
        """The value of the secret key ``key``, resolved now."""
        value = self.options.get(key)
        if not isinstance(value, Secret):
            raise ConfigError(f"connection {self.config.id!r}: {key} is not set", key)
        return value.get()

    # --- the wire ------------------------------------------------------------------------
    def auth_headers(self) -> Mapping[str, str]:
        """The headers carrying the engine's credential, sent with every request. Default:
        none."""
        return {}

    @property
    def net(self) -> NetOptions:
        """How requests reach the system (the connection's TLS and proxy settings)."""
        return self.config.net

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | None] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        body: bytes | None = None,
    ) -> Response:
        """A request to ``url + path`` (or to ``path`` when it is a full URL) within the
        check's time budget, with the connection's TLS, proxy and the engine's marker.
        ``headers`` replace :meth:`auth_headers`; a parameter that is None is left out."""
        url = path if path.startswith(("https://", "http://")) else self.config.url + path
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if query:
            url += ("&" if "?" in url else "?") + urlencode(query)
        return self.http.request(
            method,
            url,
            headers=self.auth_headers() if headers is None else headers,
            json=json,
            body=body,
            timeout=budget.remaining(self.config.timeout),
            options=self.net,
        )

    def fetch_json(
        self,
        method: str,
        path: str,
        *,
        what: str,
        params: Mapping[str, str | None] | None = None,
        json: Any = None,
        ok: Iterable[int] = (200,),
        absent: Iterable[int] = (),
        kind: type | None = dict,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The JSON answer to one request, as a ``kind`` (any JSON when None), checked by
        :meth:`accept`; None when the status is one of ``absent`` (e.g. 404). Any other
        failure raises :class:`LookupFailed` saying what happened while trying to ``what``
        (e.g. "read the project"). ``headers`` replace :meth:`auth_headers` (a credential
        that depends on the resource, as a GitHub App's installation token does)."""
        answer = self.answer(method, path, what=what, params=params, json=json, headers=headers)
        if answer.status in absent:
            return None
        if answer.status not in ok:
            raise self.failure(answer, what)
        return self.parse(answer, what, kind)

    def get_json(
        self,
        path: str,
        *,
        what: str,
        params: Mapping[str, str | None] | None = None,
        absent: Iterable[int] = (),
        kind: type | None = dict,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """:meth:`fetch_json` for a GET."""
        return self.fetch_json(
            "GET", path, what=what, params=params, absent=absent, kind=kind, headers=headers
        )

    def answer(
        self,
        method: str,
        path: str,
        *,
        what: str,
        params: Mapping[str, str | None] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
    ) -> Response:
        """:meth:`request`, whose transport failures (unreachable, slow, TLS, proxy) say
        what they were trying to do."""
        try:
            return self.request(method, path, params=params, json=json, headers=headers, body=body)
        except HTTPError as e:
            raise HTTPError(self.redact(f"{self.name} could not be asked to {what}: {e}"))

    def parse(self, answer: Response, what: str, kind: type | None = dict) -> Any:
        """The answer's JSON body as a ``kind``, checked by :meth:`accept`."""
        try:
            data = answer.json()
        except MalformedResponse:
            raise MalformedResponse(
                f"{self.name} answered {what} with a body that is not JSON (HTTP {answer.status})"
            ) from None
        if kind is not None and not isinstance(data, kind):
            noun = "an object" if kind is dict else "a list" if kind is list else kind.__name__
            raise MalformedResponse(f"{self.name}'s answer to {what} is not {noun}")
        self.accept(data, what)
        return data

    def accept(self, data: Any, what: str) -> None:  # noqa: B027 - an optional hook
        """Raise :class:`LookupFailed` for a successful answer that reports a failure in its
        body (Slack's ``"ok": false``). Default: none."""

    def error_detail(self, data: Any) -> str | None:
        """The system's own words in an error body: ``message`` or ``error``. Override for
        other shapes (Jira's ``errorMessages``)."""
        if not isinstance(data, dict):
            return None
        found = data.get("message") or data.get("error")
        return found if isinstance(found, str) and found else None

    def failure(self, answer: Response, what: str) -> LookupFailed:
        """A :class:`LookupFailed` describing an answer ``what`` cannot use."""
        status = answer.status
        if status == 401:
            text = "rejected the engine's credential"
        elif status == 403:
            text = "refused the engine's credential"
        elif status == 429:
            after = answer.header("retry-after")
            text = "rate-limited the engine" + (f" (retry after {after}s)" if after else "")
        elif 300 <= status < 400:
            text = "answered with a redirect, which the engine does not follow,"
        elif status >= 500:
            text = "failed"
        else:
            text = "gave an unexpected answer"
        try:
            detail = self.error_detail(answer.json())
        except LookupFailed:
            detail = None
        said = f": {detail[:200]}" if detail else ""
        return LookupFailed(self.redact(f"{self.name} {text} (HTTP {status}) to {what}{said}"))

    def pages(
        self,
        read_page: Callable[[str | None], tuple[Iterable[T], str | None]],
        *,
        limit: int,
        too_many: str,
    ) -> Iterator[T]:
        """The items of a paged list: ``read_page(token)`` answers a page's items and the
        next page's token (None or "" on the last page; the first page is asked with None).
        Past ``limit`` pages, :class:`LookupFailed` with ``too_many`` (never a guess)."""
        token: str | None = None
        for _ in range(limit):
            items, token = read_page(token)
            yield from items
            if not token:
                return
        raise LookupFailed(too_many)

    def secret_values(self) -> Iterator[str]:
        """The connection's secrets, as far as they resolve now, and the token the engine
        was issued (``issued``): to keep them out of reasons."""
        if self.issued is not None:
            yield self.issued[0]
        for value in self.options.values():
            if isinstance(value, Secret):
                try:
                    yield value.get()
                except Exception:  # noqa: S112 - a secret that does not resolve leaks nothing
                    continue

    def redact(self, text: str) -> str:
        """``text`` without any of the connection's secrets."""
        for secret in sorted(self.secret_values(), key=len, reverse=True):
            if len(secret) >= 4:
                text = text.replace(secret, REDACTED)
        return text


def _stable(value: Any) -> Any:
    """``value`` as plain data that reads the same in every process: secrets as their
    references, callables by name, mappings sorted."""
    if isinstance(value, Secret):
        return ("secret", value.reference)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _stable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_stable(v) for v in value]
        return tuple(sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple((f.name, _stable(getattr(value, f.name))) for f in dataclasses.fields(value))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if callable(value):
        return ("callable", getattr(value, "__module__", ""), getattr(value, "__qualname__", ""))
    return ("object", type(value).__qualname__)
