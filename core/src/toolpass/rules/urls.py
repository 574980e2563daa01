"""URLs and hosts read the way the HTTP clients read them, with the stdlib only.

A link can name a different host to different clients: urllib3 (and so requests) ends the
authority at a backslash, httpx and ``urllib`` do not (``http://evil.example\\@good.example/``
goes to evil.example through requests and to good.example through httpx); urllib3 and httpx
encode an international name by IDNA 2008 (``straße.de`` is ``xn--strae-oqa.de``), ``urllib``
by IDNA 2003 (``strasse.de``); the system resolver reads ``0x7f.1`` as ``127.0.0.1``. A
``Url`` keeps every host one of them would connect to, normalised (percent-decoded,
lower-cased, no trailing dot, punycode, IP addresses in their usual form), so a check can ask
that all of them be allowed. Links written without a scheme (``evil.example/x``) are URLs.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

from toolpass.rules.lazy import lazy_pattern

_SCHEME = lazy_pattern(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
# A link written without a scheme: a dotted name (or ``//``), then the rest of the link.
_SCHEMELESS = lazy_pattern(r"(?://|(?=[^\s/?#@\\]+\.[^\s/?#@\\]))")
_C0_AND_SPACE = "".join(map(chr, range(33)))
_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21, "ws": 80, "wss": 443}
_LABEL = lazy_pattern(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")
_PORT = lazy_pattern(r"\d{0,5}")
# Ideographic full stops, dots between labels to IDNA (``evil。example``).
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_LONGEST = 253


@dataclass(frozen=True)
class Url:
    """A URL as clients read it: ``scheme`` lower-cased (``http`` when written without
    one), ``hosts`` every host a client would connect to (one, unless clients disagree),
    ``port`` (None for the scheme's default), ``path`` percent-decoded, ``query`` as written."""

    scheme: str
    hosts: tuple[str, ...]
    port: int | None
    path: str
    query: str

    @property
    def host(self) -> str:
        """The host, when every client agrees on one; else ``""``."""
        return self.hosts[0] if len(self.hosts) == 1 else ""


@lru_cache(maxsize=4096)
def parse_url(text: str) -> Url | None:
    """``text`` as a URL with a host (``scheme://host/...``, ``//host/...`` or
    ``host.name/...``), or None when it is not one or a client would reject its host."""
    text = re.sub("[\t\n\r]", "", text.strip(_C0_AND_SPACE))  # as urllib and yarl read it
    scheme = _SCHEME.match(text)
    if scheme and text[scheme.end() :].startswith("//"):
        name, rest = scheme.group(1).lower(), text[scheme.end() + 2 :]
    elif _SCHEMELESS.match(text):
        name, rest = "http", text.removeprefix("//")
    else:
        return None
    hosts: list[str] = []
    port, tail = None, ""
    for ends in ("/?#", "/\\?#"):  # httpx and urllib; urllib3 also ends it at a backslash
        authority, rest_of_it = _authority(rest, ends)
        parsed = _host_port(authority)
        if parsed is not None:
            hosts += [h for h in parsed[0] if h not in hosts]
            port, tail = parsed[1], rest_of_it
    if scheme and "." in scheme.group(1):  # urllib3 reads no scheme there: a host, a port
        other = _host_port(_authority(text, "/?#")[0])
        hosts += [h for h in (other[0] if other else []) if h not in hosts]
    if not hosts:
        return None
    port = None if port == _DEFAULT_PORTS.get(name) else port
    path, _, query = tail.split("#", 1)[0].partition("?")
    return Url(name, tuple(hosts), port, _path(path), query)


def _authority(rest: str, ends: str) -> tuple[str, str]:
    cut = next((i for i, c in enumerate(rest) if c in ends), len(rest))
    return rest[:cut], rest[cut:]


def _host_port(authority: str) -> tuple[list[str], int | None] | None:
    """The hosts (every spelling a client may resolve) and port of ``user@host:port``."""
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        host, _, port = hostport[1:].partition("]")
        port = port.removeprefix(":")
        if not port.isdigit() and port:
            return None
    else:
        host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
    if not _PORT.fullmatch(port) or (port and int(port) > 65535):
        return None
    hosts = normalize_host(host)
    return (list(hosts), int(port) if port else None) if hosts else None


@lru_cache(maxsize=4096)
def normalize_host(host: str) -> tuple[str, ...]:
    """Every spelling of ``host`` a client resolves (percent-decoded, lower-cased, no
    trailing dot, IDNA 2008 and 2003 punycode, an IP address in its usual form); empty when
    it is not a host name or address, or is longer than DNS allows."""
    try:
        host = unicodedata.normalize("NFKC", unquote(host, errors="strict"))
    except UnicodeError:
        return ()
    host = host.translate(_DOTS).lower().rstrip(".")
    if not host or len(host) > _LONGEST:
        return ()  # no resolver looks up a name longer than DNS allows
    address = _address(host) if host[0].isdigit() or ":" in host else None
    if address is not None:
        return (address,)
    if host.isascii():
        return (host,) if all(_LABEL.fullmatch(label) for label in host.split(".")) else ()
    found: list[str] = []
    for encode in (_idna2008, _idna2003):
        name = encode(host)
        if name and all(_LABEL.fullmatch(label) for label in name.split(".")):
            found += [name] if name not in found else []
    return tuple(found)


def _address(host: str) -> str | None:
    try:
        return ipaddress.ip_address(host.strip("[]")).compressed
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fx.]+", host) and re.search(r"\d", host):
        import socket  # here: most hosts are names, and socket loads selectors and more

        try:
            return socket.inet_ntoa(socket.inet_aton(host))  # 0x7f.1, 2130706433, 0177.0.0.1
        except OSError:
            return None
    return None


def _idna2008(host: str) -> str | None:
    try:
        return ".".join(
            label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
            for label in host.split(".")
        )
    except UnicodeError:
        return None


def _idna2003(host: str) -> str | None:
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None


def _path(path: str) -> str:
    """``path`` as one spelling: dot segments removed (as urllib3 and httpx send it), then
    percent-decoded, a backslash read as a slash, runs of slashes as one."""
    segments: list[str] = []
    for segment in path.replace("\\", "/").split("/"):
        if segment == "..":
            segments[1:] = segments[1:-1]
        elif segment != ".":
            segments.append(segment)
    if path.endswith(("/.", "/..")):
        segments.append("")
    decoded = unquote("/".join(segments), errors="replace").replace("\\", "/")
    return re.sub("/{2,}", "/", decoded)


def host_of_email(address: str) -> tuple[str, ...]:
    """The spellings of the domain of ``address`` (``user@domain``), as ``normalize_host``
    gives them; empty when it has no valid domain."""
    local, at, domain = address.strip().rpartition("@")
    if not at or not local or "@" in local or _address(domain) is not None:
        return ()
    return normalize_host(domain) if "." in domain.strip(".") else ()
