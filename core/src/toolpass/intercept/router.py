"""From a request's URL to the connection that owns it and the route it takes.

A host is compared the one way it is reached, however the URL spells it: case, trailing
dots, userinfo, default ports, international spellings (IDNA), IPv6 literals (zone ids
dropped, IPv4-mapped forms as IPv4), IPv4 in every form the system resolver accepts
(``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``), and this machine
(``localhost``, any loopback or unspecified address) as ``127.0.0.1``.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import re
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote, urlsplit

from toolpass.integrations.routes import normal_path

if TYPE_CHECKING:
    from toolpass.integrations.base import Integration

_DEFAULT_PORT = {"http": 80, "https": 443}
_AUTHORITY_PATH = re.compile(r"([^/?#]*)([^?#]*)")
_NUMERIC = re.compile(r"[0-9][0-9a-fx.]*")  # what inet_aton might read as an IPv4 address
LOOPBACK = "127.0.0.1"


class Place(NamedTuple):
    """Where a request goes: the connection, its integration, and the path below its URL."""

    connection: str
    integration: Integration
    path: str


def origin(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of an absolute URL, the host as ``normal_host`` spells
    it, default ports filled in (port 0 when it is not a number). Written out, since it runs
    per request; what comes before the path is read once per address."""
    scheme, _, rest = url.partition("://")
    authority, path = _AUTHORITY_PATH.match(rest).groups()  # type: ignore[union-attr]
    return (*_address(scheme, authority), path or "/")


@functools.lru_cache(maxsize=4096)
def _address(scheme: str, authority: str) -> tuple[str, str, int]:
    scheme = scheme.lower()
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):  # [v6 address]:port
        host, _, after = authority[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ""
    elif authority.count(":") > 1:  # a v6 address a client wrote without brackets, then :port
        host, _, port_text = authority.rpartition(":")
    else:
        host, _, port_text = authority.partition(":")
    if not port_text:
        port = _DEFAULT_PORT.get(scheme, 0)
    else:
        port = int(port_text) if port_text.isdigit() else 0
    return scheme, normal_host(host), port


@functools.lru_cache(maxsize=4096)
def normal_host(host: str) -> str:
    """``host`` spelled the one way it is reached (see the module's docstring)."""
    if ":" in host:  # IPv6
        try:
            address = ipaddress.IPv6Address(host.partition("%")[0])  # no zone id
        except ValueError:
            return host.lower()
        return _spelled(address.ipv4_mapped or address)
    if "%" in host:
        host = unquote(host)
    if not host.isascii():
        with contextlib.suppress(UnicodeError):  # a client could not send it either
            host = host.encode("idna").decode("ascii")
    host = host.lower().rstrip(".")
    if host == "localhost":  # (its subdomains are names a resolver may or may not know)
        return LOOPBACK
    if _NUMERIC.fullmatch(host):
        try:
            return _spelled(ipaddress.IPv4Address(socket.inet_aton(host)))
        except OSError:
            pass
    return host


def _spelled(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return LOOPBACK if address.is_loopback or address.is_unspecified else str(address)


class Router:
    """Connections indexed by scheme, host and port; the longest base path wins."""

    def __init__(self, connections: Iterable[tuple[str, Integration]]) -> None:
        self._hosts: dict[tuple[str, str, int], list[tuple[str, str, Integration]]] = {}
        self._other: list[tuple[str, Integration]] = []
        self._spelling: dict[tuple[str, str, int], str] = {}  # as the connections write it
        for conn_id, integration in connections:
            url = integration.config.url
            scheme, host, port, base = origin(url)
            base = normal_path(base) or base
            self._spelling[(scheme, host, port)] = urlsplit(url).hostname or host
            bases = self._hosts.setdefault((scheme, host, port), [])
            bases.append((base.rstrip("/"), conn_id, integration))
            bases.sort(key=lambda b: len(b[0]), reverse=True)
            if type(integration).serves is not _base_serves():
                self._other.append((conn_id, integration))

    def __len__(self) -> int:
        """How many connections requests are checked against."""
        return sum(len(bases) for bases in self._hosts.values())

    def place(self, scheme: str, host: str, port: int, path: str) -> Place | None:
        """The connection a request to this address (host as ``origin`` gives it, path as
        ``normal_path`` does) belongs to, or None for an unknown host."""
        key = (scheme, host, port)
        for base, conn_id, integration in self._hosts.get(key, ()):
            if path == base or path.startswith(base + "/") or not base:
                return Place(conn_id, integration, path[len(base) :] or "/")
        spelled = self._spelling.get(key, host)  # the host as the integration knows it
        for conn_id, integration in self._other:
            if integration.serves(scheme, spelled, port):
                return Place(conn_id, integration, path)
        return None


def _base_serves() -> object:
    from toolpass.integrations.base import Integration

    return Integration.serves
