"""How the application's user (an email) becomes the system's user.

Modes, shared by every integration:

- an integration's own modes (``lookup``: the system's look-up; GitHub adds ``saml``);
- ``template``: ``{local}``, ``{domain}`` and ``{email}`` filled from the email;
- ``users``: a mapping written in the connection;
- ``file``: a JSON or YAML mapping file, re-read when it changes;
- ``http``: ``GET <url>?email=&system=&connection=`` on a service the deployment runs,
  answering ``{"user": "id"}`` (or ``{"users": [...]}``; 404 or ``{"user": null}``: no one);
- ``callable``: ``resolve(email) -> str | list[str] | None``, in code.

``users`` entries are consulted first in every mode, and ``domains`` (when given) limits
which email domains may be mapped at all. Emails, ``users`` keys, ``domains`` and mapping
files are compared in one normalised form (:func:`normalize_email`: NFKC, then case-folded;
characters that fold into others are refused). Matching is exact; no one or several people is
never a guess but a :class:`LookupFailed`, i.e. an ``unknown`` decision. Mappings found by a
look-up, a service or a callable are cached for ``cache_ttl`` seconds.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from string import Formatter
from typing import Any
from urllib.parse import urlencode

from toolpass.wire import budget
from toolpass.wire.errors import ConfigError, LookupFailed, UnknownUser
from toolpass.wire.fresh import asking_fresh
from toolpass.wire.http import HTTPClient, NetOptions, check_url
from toolpass.wire.secrets import Secret, parse_secret
from toolpass.wire.watched import WatchedFile, json_or_yaml

Resolve = Callable[[str], "str | Sequence[str] | None"]
Lookup = Callable[[str, str], Sequence[str]]
SHARED_MODES = ("template", "users", "file", "http", "callable")
KEYS = ("mode", "users", "template", "domains", "file", "url", "token", "resolve", "cache_ttl")


def default_mode(own_modes: Sequence[str]) -> str:
    """The identity mode a connection gets when it names none: the system's own look-up,
    else an explicit ``users`` mapping (never a guess such as a template)."""
    return own_modes[0] if own_modes else "users"


@dataclass(frozen=True)
class IdentitySettings:
    """A connection's ``identity:`` section, validated."""

    mode: str = "users"
    users: Mapping[str, str] = field(default_factory=dict)
    template: str | None = None
    domains: tuple[str, ...] = ()
    file: str | None = None
    url: str | None = None
    token: Secret | None = None
    resolve: Resolve | None = None
    cache_ttl: float = 3600.0


def normalize_email(email: str) -> str:
    """The one form emails are compared in: NFKC, then case-folded (``Dana@Example.com`` is
    ``dana@example.com``). :class:`LookupFailed` when ``email`` is not one plain address, or
    holds a character that could pose as another once folded: one that NFKC changes (a
    fullwidth letter, a ligature, the Kelvin sign) or a non-ASCII one whose case mapping
    yields ASCII (the long s, the dotless i, the dotted capital I, the sharp s)."""
    local, at, domain = email.partition("@")
    if (
        not at
        or not local
        or "@" in domain
        or "." not in domain
        or any(c.isspace() or unicodedata.category(c)[0] == "C" for c in email)
    ):
        raise UnknownUser(f"{email!r} is not an email address")
    if email.isascii():
        return email.lower()
    posing = _posing(email)
    if posing is not None:
        raise UnknownUser(f"{email!r} is not a plain email address: {posing}")
    return unicodedata.normalize("NFKC", email.casefold())


def _posing(email: str) -> str | None:
    """Why ``email`` could pose as another address once normalised, or None: a character
    that NFKC changes, or a non-ASCII one whose case mapping yields ASCII."""
    for c in email:
        if c.isascii():
            continue
        mapped = c.lower() + c.upper() + c.casefold()
        if unicodedata.normalize("NFKC", c) != c or any(m.isascii() for m in mapped):
            name = unicodedata.name(c, "an unnamed character")
            return f"U+{ord(c):04X} {name} turns into another character when normalised"
    if unicodedata.normalize("NFKC", email) != email:
        return "it has combining marks that normalisation composes into other characters"
    return None


def same_email(found: object, email: str) -> bool:
    """Whether ``found`` (an address a system answered) is ``email``, both normalised; an
    address that could pose as another (``\u212aim@example.com``) is no one's."""
    if not isinstance(found, str):
        return False
    try:
        return normalize_email(found) == normalize_email(email)
    except LookupFailed:
        return False


def _config_domain(domain: str) -> str:
    try:
        return normalize_email(f"x@{domain.lstrip('@')}").partition("@")[2]
    except LookupFailed:
        raise ConfigError(f"{domain!r} is not a plain email domain", "identity.domains") from None


def _users_mapping(users: Mapping[str, str]) -> dict[str, str]:
    """The ``users`` mapping keyed by normalised email; two spellings of one email that map
    to different users are a :class:`ConfigError`."""
    table: dict[str, str] = {}
    for email, user in users.items():
        try:
            key = normalize_email(email)
        except LookupFailed as e:
            raise ConfigError(str(e), "identity.users") from None
        if table.setdefault(key, user) != user:
            raise ConfigError(f"{email!r} is mapped twice, to different users", "identity.users")
    return table


def parse_identity(
    raw: object, own_modes: Sequence[str], *, in_code: bool, base_dir: str | None = None
) -> IdentitySettings:
    """Validate an ``identity:`` value; ``ConfigError.key`` names the offending sub-key."""
    if raw is None:
        return IdentitySettings(mode=default_mode(own_modes))
    if callable(raw) and in_code:
        return IdentitySettings(mode="callable", resolve=raw)
    if not isinstance(raw, Mapping):
        raise ConfigError("identity must be a mapping", "identity")
    for key in raw:
        if key not in KEYS:
            raise ConfigError(f"unknown key (expected one of {', '.join(KEYS)})", f"identity.{key}")
    modes = (*own_modes, *SHARED_MODES)
    mode = raw.get("mode", default_mode(own_modes))
    if mode not in modes:
        raise ConfigError(f"must be one of {', '.join(modes)}", "identity.mode")
    users = raw.get("users", {})
    if not isinstance(users, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in users.items()
    ):
        raise ConfigError("must map emails to user names", "identity.users")
    domains = raw.get("domains", [])
    if not isinstance(domains, list) or not all(isinstance(d, str) and d for d in domains):
        raise ConfigError("must be a list of email domains", "identity.domains")
    settings = IdentitySettings(
        mode=mode,
        users=_users_mapping(users),
        domains=tuple(_config_domain(d) for d in domains),
        cache_ttl=_number(raw.get("cache_ttl", 3600.0), "identity.cache_ttl"),
    )
    needs = {"template": "template", "file": "file", "http": "url", "callable": "resolve"}
    if mode in needs and raw.get(needs[mode]) is None:
        raise ConfigError(f"mode {mode} needs identity.{needs[mode]}", "identity.mode")
    if mode == "template":
        template = raw["template"]
        if not isinstance(template, str) or not _valid_template(template):
            raise ConfigError("use only {local}, {domain} and {email}", "identity.template")
        if not settings.domains:
            raise ConfigError("a template needs identity.domains to limit it", "identity.domains")
        settings = _replace(settings, template=template)
    if raw.get("file") is not None:
        path = raw["file"]
        if not isinstance(path, str):
            raise ConfigError("must be a path", "identity.file")
        settings = _replace(settings, file=os.path.join(base_dir or "", path))
    if raw.get("url") is not None:
        settings = _replace(settings, url=check_url(raw["url"], "identity.url"))
    if raw.get("token") is not None:
        try:
            token = parse_secret(raw["token"], allow_literal=in_code)
        except ConfigError as e:
            raise ConfigError(str(e), "identity.token")
        settings = _replace(settings, token=token)
    if raw.get("resolve") is not None:
        if not (in_code and callable(raw["resolve"])):
            raise ConfigError("must be a callable, given in code", "identity.resolve")
        settings = _replace(settings, resolve=raw["resolve"])
    return settings


def _replace(settings: IdentitySettings, **changes: Any) -> IdentitySettings:
    return dataclasses.replace(settings, **changes)


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError("must be a number of seconds, 0 or more", key)
    return float(value)


def _valid_template(template: str) -> bool:
    try:
        fields = [f for _, f, spec, conv in Formatter().parse(template) if f is not None]
    except ValueError:
        return False
    return bool(fields) and all(f in ("local", "domain", "email") for f in fields)


def _mapping_file(path: str) -> WatchedFile:
    """A mapping file of emails to users, re-read whenever it changes."""

    def parse(text: str) -> dict[str, list[str]]:
        data = json_or_yaml(path, text, "identity file")
        if not isinstance(data, dict):
            raise LookupFailed(f"identity file {path} must be a mapping of emails to users")
        users: dict[str, list[str]] = {}
        for email, user in data.items():
            if isinstance(email, str) and isinstance(user, str) and user:
                try:
                    key = normalize_email(email)
                except LookupFailed:
                    continue  # no look-up can name it: every look-up is normalised first
                users.setdefault(key, []).append(user)
        return users

    return WatchedFile(path, parse, "identity file")


class IdentityResolver:
    """Maps emails to a system's users for one connection (thread-safe, cached)."""

    def __init__(
        self,
        settings: IdentitySettings,
        *,
        system: str,
        connection: str,
        lookup: Lookup | None = None,
        http: HTTPClient | None = None,
        cache_size: int = 10_000,
    ) -> None:
        self.settings = settings
        self._system = system
        self._connection = connection
        self._lookup = lookup
        self._http = http or HTTPClient()
        self._file = _mapping_file(settings.file) if settings.file else None
        self._cache: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def resolve(self, email: str) -> str:
        """The one user ``email`` maps to; :class:`LookupFailed` for no one or several."""
        email = normalize_email(email)
        domain = email.rpartition("@")[2]
        s = self.settings
        if s.domains and domain not in s.domains:
            raise UnknownUser(f"{email} is not in an email domain this connection maps")
        if email in s.users:
            return s.users[email]
        if s.mode == "users":
            return self._one(email, [])
        if s.mode == "template":
            assert s.template is not None
            local = email.rpartition("@")[0]
            return self._one(email, [s.template.format(local=local, domain=domain, email=email)])
        if s.mode == "file":
            assert self._file is not None
            return self._one(email, self._file.get().get(email, []))
        now = time.monotonic()
        with self._lock:
            hit = None if asking_fresh() else self._cache.get(email)
            if hit is not None and hit[0] > now:
                return hit[1]
        user = self._one(email, self._find(email))
        with self._lock:
            self._cache[email] = (now + s.cache_ttl, user)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return user

    def _find(self, email: str) -> Sequence[str]:
        s = self.settings
        if s.mode == "http":
            return self._ask_service(email)
        if s.mode == "callable":
            assert s.resolve is not None
            try:
                found = s.resolve(email)
            except Exception as e:
                raise LookupFailed(f"the identity callable failed ({type(e).__name__}: {e})")
            if found is None:
                return []
            return [found] if isinstance(found, str) else list(found)
        if self._lookup is None:
            raise LookupFailed(f"{self._system} has no identity mode {s.mode!r}")
        return self._lookup(email, s.mode)

    def _ask_service(self, email: str) -> Sequence[str]:
        assert self.settings.url is not None
        query = urlencode({"email": email, "system": self._system, "connection": self._connection})
        sep = "&" if "?" in self.settings.url else "?"
        headers = {}
        if self.settings.token is not None:
            headers["Authorization"] = f"Bearer {self.settings.token.get()}"
        answer = self._http.request(
            "GET",
            f"{self.settings.url}{sep}{query}",
            headers=headers,
            timeout=budget.remaining(),
            options=NetOptions(),
        )
        if answer.status == 404:
            return []
        if answer.status != 200:
            raise LookupFailed(f"the identity service answered HTTP {answer.status}")
        data = answer.json()
        if isinstance(data, dict) and isinstance(data.get("users"), list):
            found = data["users"]
        elif isinstance(data, dict) and "user" in data:
            found = [] if data["user"] is None else [data["user"]]
        else:
            raise LookupFailed("the identity service's answer has neither user nor users")
        if not all(isinstance(u, str) for u in found):
            raise LookupFailed("the identity service's answer holds a user that is not a string")
        return [str(u) for u in found]

    def _one(self, email: str, found: Sequence[str]) -> str:
        unique = list(dict.fromkeys(found))
        if not unique:
            raise UnknownUser(f"{email} maps to no {self._system} user ({self.settings.mode})")
        if len(unique) > 1:
            raise UnknownUser(
                f"{email} maps to {len(unique)} {self._system} users ({self.settings.mode}); "
                "refusing to guess"
            )
        user = unique[0]
        if not user or any(c.isspace() or unicodedata.category(c)[0] == "C" for c in user):
            raise UnknownUser(f"{email} maps to an invalid {self._system} user name")
        return user

    def check(self) -> None:
        """Raise if the mode's file or token cannot be used now (no network)."""
        if self._file is not None:
            self._file.get()
        if self.settings.token is not None:
            self.settings.token.check()
