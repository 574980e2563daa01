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
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote, urlsplit

from toolpass.integrations.routes import normal_path
from toolpass.rules.lazy import lazy_pattern

if TYPE_CHECKING:
    from toolpass.integrations.base import Integration

_DEFAULT_PORT = {"http": 80, "https": 443}
_AUTHORITY_PATH = lazy_pattern(r"([^/?#]*)([^?#]*)")
_NUMERIC = lazy_pattern(r"[0-9][0-9a-fx.]*")  # what inet_aton might read as an IPv4 address
_SCHEME = lazy_pattern(r"[A-Za-z][A-Za-z0-9+.-]*")
_ABSOLUTE = lazy_pattern(r"[A-Za-z][A-Za-z0-9+.-]*://")
# What no parser reads the same way in an authority: spaces, controls, backslashes, quotes.
_UNREADABLE = lazy_pattern(r'[\x00-\x20\x7f\\"<>^`{|}]')
# What a request line cannot carry in its target: spaces and controls end or break it.
_BREAKS_LINE = lazy_pattern(r"[\x00-\x20\x7f]")
LOOPBACK = "127.0.0.1"


class Place(NamedTuple):
    """Where a request goes: the connection, its integration, and the path below its URL."""

    connection: str
    integration: Integration
    path: str


def origin(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of an absolute URL, the scheme lower-cased, the host as
    ``normal_host`` spells it, default ports filled in (port 0 for an unknown scheme).
    Raises ``ValueError`` for an address that cannot be read one way only: no scheme, no
    host, a port that is not a number, a second ``@``, spaces, backslashes or control
    characters (anywhere in the URL). Written out, since it runs per request; what comes
    before the path is read once per address."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError("not an absolute URL")
    if _BREAKS_LINE.search(rest):
        raise ValueError("a space or control character in the target")
    authority, path = _AUTHORITY_PATH.match(rest).groups()  # type: ignore[union-attr]
    return (*_address(scheme, authority), path or "/")


def absolute(target: str) -> bool:
    """Whether a request target is in absolute form (``scheme://...``, any case), as sent
    to a forward proxy."""
    return _ABSOLUTE.match(target) is not None


@functools.lru_cache(maxsize=4096)
def _address(scheme: str, authority: str) -> tuple[str, str, int]:
    if not _SCHEME.fullmatch(scheme) or _UNREADABLE.search(authority) or authority.count("@") > 1:
        raise ValueError("an address that cannot be read one way only")
    scheme = scheme.lower()
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):  # [v6 address]:port
        host, _, after = authority[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ""
    elif authority.count(":") > 1:  # a v6 address a client wrote without brackets, then :port
        host, _, port_text = authority.rpartition(":")
        _v6(host)
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        raise ValueError("no host")
    if not port_text:
        port = _DEFAULT_PORT.get(scheme, 0)
    elif port_text.isascii() and port_text.isdigit() and int(port_text) <= 65535:
        port = int(port_text)
    else:
        raise ValueError("a port that is not a number")
    return scheme, normal_host(host), port


def _v6(host: str) -> None:
    try:
        ipaddress.IPv6Address(host.partition("%")[0])
    except ValueError:
        raise ValueError("a host with a colon that is no IPv6 address") from None


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
        import socket  # here: most hosts are names, and socket loads selectors and more

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
