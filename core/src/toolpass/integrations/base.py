"""The contract every integration fulfils, declared as data plus two methods.

A subclass declares ``name``, ``description``, ``keys`` (its own configuration keys),
``actions``, ``routes`` and ``default_url``, and implements :meth:`Integration.check` and
:meth:`Integration.probe` against the system's documented API. Systems with their own
identity look-up list their modes in ``identity_modes`` and implement
:meth:`Integration.lookup_user`. Failures are raised as :class:`LookupFailed` (or the HTTP
client's errors, which are ones); the engine turns them into ``unknown`` decisions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import urlencode

from toolpass.engine import budget
from toolpass.engine.config import ConfigKey, ConnectionConfig
from toolpass.engine.decision import Decision
from toolpass.engine.errors import ConfigError, LookupFailed
from toolpass.engine.http import HTTPClient, Response
from toolpass.engine.identity import IdentityResolver
from toolpass.engine.secrets import Secret
from toolpass.intercept.routes import Match, Request, Route, RouteTable, load

__all__ = [
    "Action",
    "ConfigKey",
    "ConnectionConfig",
    "Decision",
    "Effect",
    "Integration",
    "LookupFailed",
    "ProbeResult",
    "Route",
]

Effect = Literal["read", "write", "destructive"]


@dataclass(frozen=True, slots=True)
class Action:
    """An action a user may be allowed: ``requires`` says what the system requires for it."""

    name: str
    description: str
    effect: Effect
    requires: str = ""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Whether a connection's credential works, live, and what was seen."""

    ok: bool
    detail: str


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
    def route_table(cls) -> RouteTable:
        """The system's route table: the shipped ``routes/<name>.json`` plus ``routes``, loaded
        on first use."""
        table = cls.__dict__.get("_route_table")
        if table is None:
            shipped = load(cls.name)
            table = RouteTable((*shipped.routes, *cls.routes)) if cls.routes else shipped
            cls._route_table = table
        return table

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
        """The system users ``email`` may be, by the system's own look-up ``mode``."""
        raise LookupFailed(f"{self.name} has no identity look-up {mode!r}")

    def user_id(self, email: str) -> str:
        """The one system user ``email`` maps to (raises :class:`LookupFailed` otherwise)."""
        return self.identity.resolve(email)

    def secret(self, key: str) -> str:
        """The value of the secret key ``key``, resolved now."""
        value = self.options.get(key)
        if not isinstance(value, Secret):
            raise ConfigError(f"connection {self.config.id!r}: {key} is not set", key)
        return value.get()

    def failure(self, answer: Response, what: str) -> LookupFailed:
        """A :class:`LookupFailed` describing an answer ``what`` cannot use."""
        status = answer.status
        meaning = {401: "rejected the engine's credential", 403: "refused the engine's credential"}
        if status in meaning:
            text = meaning[status]
        elif status == 429:
            after = answer.header("retry-after")
            text = "rate-limited the engine" + (f" (retry after {after}s)" if after else "")
        elif status >= 500:
            text = "failed"
        else:
            text = "gave an unexpected answer"
        message = ""
        try:
            data = answer.json()
            found = data.get("message") or data.get("error") if isinstance(data, dict) else None
            if isinstance(found, str) and found:
                message = f": {found[:200]}"
        except LookupFailed:
            pass
        return LookupFailed(f"{self.name} {text} (HTTP {status}) to {what}{message}")

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        body: bytes | None = None,
    ) -> Response:
        """A request to ``url + path`` (or to ``path`` when it is a full URL) within the
        check's time budget, with the connection's TLS, proxy and the engine's marker."""
        url = path if path.startswith(("https://", "http://")) else self.config.url + path
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        return self.http.request(
            method,
            url,
            headers=headers,
            json=json,
            body=body,
            timeout=budget.remaining(self.config.timeout),
            options=self.config.net,
        )
