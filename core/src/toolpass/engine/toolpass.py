"""``Toolpass``: the permission engine in process."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from toolpass.engine.cache import DecisionCache
from toolpass.engine.checker import Checker
from toolpass.engine.config import Config, ConnectionConfig, load_config, parse_connections
from toolpass.store import Store
from toolpass.wire import budget
from toolpass.wire.decision import Decision, Where
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.fresh import fresh_lookups
from toolpass.wire.http import HTTPClient
from toolpass.wire.secrets import Secret

if TYPE_CHECKING:
    from toolpass.engine.remote import RemoteToolpass
    from toolpass.integrations.base import Integration, ProbeResult

log = logging.getLogger("toolpass.engine")


class Toolpass(Checker):
    """Asks the system that owns a resource whether a user may act on it.

    ``Toolpass(connections=[{...}])`` in code, or ``Toolpass.from_config("toolpass.yaml")``.
    Decisions are cached per connection (allow and deny only); ``fresh=True`` asks anew,
    past every cache of the integration too (identity, account state, role assignments).
    ``store`` (a ``toolpass.store`` URL or ``Store``) shares the cache between processes; a
    cached decision is keyed by the connection's system, URL and settings as well as its
    name, so deployments configured differently never answer from each other's decisions.
    """

    def __init__(
        self,
        connections: Iterable[Mapping[str, Any]] = (),
        *,
        cache_size: int = 10_000,
        store: Store | str | None = None,
    ) -> None:
        self._setup(Config(parse_connections(connections)), cache_size, store)

    @classmethod
    def from_config(
        cls,
        path: str | os.PathLike[str],
        *,
        cache_size: int = 10_000,
        store: Store | str | None = None,
    ) -> Toolpass:
        """The engine for the connections of a YAML file (needs the ``yaml`` extra); its
        ``store:`` key, unless ``store`` is given, shares the decision cache."""
        tp = cls.__new__(cls)
        config = load_config(path)
        tp._setup(config, cache_size, store if store is not None else config.store)
        return tp

    @staticmethod
    def remote(
        url: str | Sequence[str] | None = None,
        api_key: str | Secret | None = None,
        *,
        timeout: float = 10.0,
        ca_file: str | None = None,
    ) -> RemoteToolpass:
        """A client of ``toolpass serve`` with the same methods (defaults: ``TOOLPASS_URL``,
        ``TOOLPASS_API_KEY``); several URLs (a list) fail over."""
        from toolpass.engine.remote import RemoteToolpass

        return RemoteToolpass(url, api_key, timeout=timeout, ca_file=ca_file)

    def _setup(self, config: Config, cache_size: int, store: Store | str | None) -> None:
        self.config = config
        self._http = HTTPClient()
        shared = None if store is None else config.open_store(store)
        self._cache = DecisionCache(cache_size, store=shared)
        self._conns: dict[str, ConnectionConfig] = {c.id: c for c in config.connections}
        self._integrations: dict[str, Integration] = {}
        self._scopes: dict[str, str] = {}
        for c in config.connections:
            try:
                self._integrations[c.id] = c.integration(c, self._http)
            except ConfigError as e:
                key = f", key {e.key!r}" if e.key else ""
                raise ConfigError(f"{c.origin}, connection {c.id!r}{key}: {e}") from None
            self._scopes[c.id] = self._integrations[c.id].cache_scope()

    def _key(self, connection: str, user: str, action: str, resource: str) -> tuple[str, ...]:
        """The decision cache's key: the question and which system it was asked of."""
        return (connection, self._scopes.get(connection, ""), user, action, resource)

    @property
    def connections(self) -> tuple[str, ...]:
        """The configured connection ids."""
        return tuple(self._conns)

    def configured(self, connection: str, action: str) -> bool:
        """True when ``connection`` exists and its integration declares ``action``."""
        conn = self._conns.get(connection)
        return conn is not None and conn.integration.action(action) is not None

    def integration(self, connection: str) -> Integration:
        """The integration object of ``connection`` (``KeyError`` if there is none)."""
        return self._integrations[connection]

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """May ``user`` do ``action`` on ``resource`` in ``connection``? See :class:`Checker`."""
        key = self._key(connection, user, action, resource)
        if not fresh:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        conn = self._conns.get(connection)
        where: Where = {
            "user": user,
            "connection": connection,
            "action": action,
            "resource": resource,
        }
        if conn is None:
            known = ", ".join(self._conns) or "none"
            return Decision.unknown(
                f"no connection {connection!r} is configured ({known})", **where
            )
        if conn.integration.action(action) is None:
            reason = f"{connection} ({conn.integration.name}) has no action {action!r}"
            return Decision.unknown(reason, **where)
        if not isinstance(user, str) or not user or not isinstance(resource, str) or not resource:
            return Decision.unknown("a check needs a user and a resource", **where)
        return self._cache.lookup(
            key, lambda: self._ask(conn, user, action, resource, fresh), conn.ttl, fresh=fresh
        )

    def _ask(
        self, conn: ConnectionConfig, user: str, action: str, resource: str, fresh: bool
    ) -> Decision:
        where: Where = {"user": user, "connection": conn.id, "action": action, "resource": resource}
        try:
            with budget.budget(conn.timeout), fresh_lookups(fresh):
                decision = self.integration(conn.id).check(user, action, resource)
            if not isinstance(decision, Decision) or decision.decision not in (
                "allow",
                "deny",
                "unknown",
            ):
                raise LookupFailed(f"the {conn.integration.name} integration answered nonsense")
        except LookupFailed as e:
            return Decision.unknown(f"{conn.id}: {e}", cause=e.cause, **where)
        except ConfigError as e:
            return Decision.unknown(f"{conn.id}: {e}", **where)
        except Exception as e:
            log.exception("check on %s failed", conn.id)
            reason = f"{conn.id}: the check failed unexpectedly ({type(e).__name__}: {e})"
            return Decision.unknown(reason, **where)
        return dataclasses.replace(decision, **where)

    def _peek(self, user: str, connection: str, action: str, resource: str) -> Decision | None:
        return self._cache.peek(self._key(connection, user, action, resource))

    def probe(self, connection: str | None = None) -> dict[str, ProbeResult]:
        """Ask each connection's system (or just ``connection``'s) whether its credential works."""
        from toolpass.integrations.base import ProbeResult

        ids = self.connections if connection is None else (connection,)
        results = {}
        for conn_id in ids:
            conn = self._conns.get(conn_id)
            if conn is None:
                results[conn_id] = ProbeResult(False, "no such connection")
                continue
            try:
                with budget.budget(conn.timeout):
                    results[conn_id] = self.integration(conn_id).probe()
            except (LookupFailed, ConfigError) as e:
                results[conn_id] = ProbeResult(False, str(e))
            except Exception as e:
                log.exception("probe of %s failed", conn_id)
                results[conn_id] = ProbeResult(False, f"failed ({type(e).__name__}: {e})")
        return results

    def clear_cache(self) -> None:
        """Forget every cached decision."""
        self._cache.clear()

    def close(self) -> None:
        """Close kept-alive connections."""
        self._http.close()

    def __enter__(self) -> Toolpass:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
