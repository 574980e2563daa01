"""From a request's URL to the connection that owns it and the route it takes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from toolpass.integrations.base import Integration

_DEFAULT_PORT = {"http": 80, "https": 443}
_AUTHORITY_PATH = re.compile(r"([^/?#]*)([^?#]*)")


class Place(NamedTuple):
    """Where a request goes: the connection, its integration, and the path below its URL."""

    connection: str
    integration: Integration
    path: str


def origin(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of an absolute URL, host lower-cased, default ports
    filled in (port 0 when it is not a number). Written out, since it runs per request."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    authority, path = _AUTHORITY_PATH.match(rest).groups()  # type: ignore[union-attr]
    path = path or "/"
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):  # [v6 address]:port
        host, _, after = authority[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ""
    else:
        host, _, port_text = authority.partition(":")
    if not port_text:
        port = _DEFAULT_PORT.get(scheme, 0)
    else:
        port = int(port_text) if port_text.isdigit() else 0
    return scheme, host.lower().rstrip("."), port, path  # "api.github.com." is the same host


class Router:
    """Connections indexed by scheme, host and port; the longest base path wins."""

    def __init__(self, connections: Iterable[tuple[str, Integration]]) -> None:
        self._hosts: dict[tuple[str, str, int], list[tuple[str, str, Integration]]] = {}
        self._other: list[tuple[str, Integration]] = []
        for conn_id, integration in connections:
            scheme, host, port, base = origin(integration.config.url)
            bases = self._hosts.setdefault((scheme, host, port), [])
            bases.append((base.rstrip("/"), conn_id, integration))
            bases.sort(key=lambda b: len(b[0]), reverse=True)
            if type(integration).serves is not _base_serves():
                self._other.append((conn_id, integration))

    def place(self, scheme: str, host: str, port: int, path: str) -> Place | None:
        """The connection a request to this address belongs to, or None for an unknown host."""
        for base, conn_id, integration in self._hosts.get((scheme, host, port), ()):
            if path == base or path.startswith(base + "/") or not base:
                return Place(conn_id, integration, path[len(base) :] or "/")
        for conn_id, integration in self._other:
            if integration.serves(scheme, host, port):
                return Place(conn_id, integration, path)
        return None


def _base_serves() -> object:
    from toolpass.integrations.base import Integration

    return Integration.serves
