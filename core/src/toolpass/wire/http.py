"""The engine's own HTTP client, on the standard library.

Connections are kept alive in one pool per (scheme, host, port, network options) and are
shared safely between threads. TLS is always verified (``ca_file`` replaces the system's
roots, ``tls_server_name`` names the certificate to expect), ``proxy_url`` tunnels https
through HTTP CONNECT, every request has a timeout, and redirects are never followed: a 3xx
is returned as it is. A request that fails on a stale kept-alive connection is retried once.

Requests made here are the engine's own and must never be checked by the request hook:
while one is on the wire, :data:`ENGINE_REQUEST` is True in the calling context, and a hook
MUST let the request pass untouched when it is set.
"""

from __future__ import annotations

import http.client
import ipaddress
import json as jsonlib
import ssl
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from toolpass._version import __version__
from toolpass.wire.errors import ConfigError, LookupFailed

ENGINE_REQUEST: ContextVar[bool] = ContextVar("toolpass_engine_request", default=False)
"""True while the engine's client sends a request; the request hook must skip it then."""

USER_AGENT = f"toolpass/{__version__}"
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class HTTPError(LookupFailed):
    """The request failed before an answer arrived (connection, TLS, timeout, size)."""


class MalformedResponse(LookupFailed):
    """The answer arrived but is not what the protocol promises (e.g. not JSON)."""


@dataclass(frozen=True, slots=True)
class NetOptions:
    """How to reach a host: trusted roots, expected certificate name, proxy."""

    ca_file: str | None = None
    tls_server_name: str | None = None
    proxy_url: str | None = None


@dataclass(frozen=True, slots=True)
class Response:
    """A complete answer. ``headers`` has lower-case names."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The header's value, or None."""
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body parsed as JSON; raises :class:`MalformedResponse` when it is not."""
        try:
            return jsonlib.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise MalformedResponse(f"the answer (HTTP {self.status}) is not JSON")


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS with a chosen certificate name, through a CONNECT tunnel when proxied."""

    def __init__(
        self, host: str, port: int, *, timeout: float, context: ssl.SSLContext, server_name: str
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._tls = context
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP (TCP_NODELAY set) and the tunnel
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


_PoolKey = tuple[str, str, int, NetOptions]


class HTTPClient:
    """A thread-safe pool of kept-alive connections. See the module docstring."""

    def __init__(self, *, max_idle: int = 8, max_body: int = 16 * 1024 * 1024) -> None:
        self._max_idle = max_idle
        self._max_body = max_body
        self._lock = threading.Lock()
        self._idle: dict[_PoolKey, list[http.client.HTTPConnection]] = {}
        self._contexts: dict[str | None, ssl.SSLContext] = {}

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        body: bytes | None = None,
        timeout: float = 10.0,
        options: NetOptions = NetOptions(),
    ) -> Response:
        """Send one request and read the whole answer.

        Raises :class:`HTTPError` when no answer arrives; any status, 3xx included, is
        returned as a :class:`Response`.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HTTPError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key: _PoolKey = (parts.scheme, parts.hostname, port, options)
        direct = parts.scheme == "https" or not options.proxy_url
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if not direct:
            target = f"http://{parts.netloc}{target}"
        all_headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if json is not None:
            body = jsonlib.dumps(json).encode()
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        token = ENGINE_REQUEST.set(True)
        try:
            return self._send(key, method, target, body, all_headers, timeout)
        finally:
            ENGINE_REQUEST.reset(token)

    def _send(
        self,
        key: _PoolKey,
        method: str,
        target: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: float,
    ) -> Response:
        where = f"{key[0]}://{key[1]}:{key[2]}"
        retried = False
        while True:
            conn, reused = self._take(key, timeout)
            try:
                conn.request(method, target, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read(self._max_body + 1)
            except _STALE as e:
                conn.close()
                if reused and not retried:  # the server closed an idle kept-alive connection
                    retried = True
                    continue
                raise HTTPError(f"{where}: connection failed ({type(e).__name__})")
            except TimeoutError:
                conn.close()
                raise HTTPError(f"{where}: no answer within {timeout:g}s")
            except ssl.SSLCertVerificationError as e:
                conn.close()
                raise HTTPError(f"{where}: TLS certificate not trusted ({e.verify_message})")
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise HTTPError(f"{where}: request failed ({type(e).__name__}: {e})")
            if len(data) > self._max_body:
                conn.close()
                raise HTTPError(f"{where}: answer larger than {self._max_body} bytes")
            if answer.will_close:
                conn.close()
            else:
                self._give_back(key, conn)
            names = {k.lower(): ", ".join(answer.headers.get_all(k) or ()) for k in answer.headers}
            return Response(answer.status, names, data)

    def _take(self, key: _PoolKey, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            conn = idle.pop() if idle else None
        if conn is not None:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            return conn, True
        return self._connect(key, timeout), False

    def _give_back(self, key: _PoolKey, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self._max_idle:
                idle.append(conn)
                return
        conn.close()

    def _connect(self, key: _PoolKey, timeout: float) -> http.client.HTTPConnection:
        scheme, host, port, options = key
        if options.proxy_url:
            proxy = urlsplit(options.proxy_url)
            via: tuple[str, int] = (proxy.hostname or "", proxy.port or 80)
        else:
            via = (host, port)
        if scheme == "http":
            return http.client.HTTPConnection(*via, timeout=timeout)
        conn = _HTTPSConnection(
            *via,
            timeout=timeout,
            context=self._context(options.ca_file),
            server_name=options.tls_server_name or host,
        )
        if options.proxy_url:
            conn.set_tunnel(host, port)
        return conn

    def _context(self, ca_file: str | None) -> ssl.SSLContext:
        with self._lock:
            context = self._contexts.get(ca_file)
        if context is None:
            context = tls_context(ca_file)
            with self._lock:
                self._contexts[ca_file] = context
        return context

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            pools, self._idle = self._idle, {}
        for idle in pools.values():
            for conn in idle:
                conn.close()


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """A verifying TLS context; ``ca_file`` (PEM) replaces the system's roots."""
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as e:
        raise HTTPError(f"cannot load CA file {ca_file}: {e}")


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: object, key: str) -> str:
    """An https:// URL (http:// only on loopback), without a trailing slash."""
    if not isinstance(url, str):
        raise ConfigError("must be a URL", key)
    parts = urlsplit(url)
    if not parts.hostname or parts.scheme not in ("https", "http"):
        raise ConfigError("must be an https:// URL", key)
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ConfigError("must be https:// (http:// only on localhost)", key)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError("must not carry credentials, a query or a fragment", key)
    return url.rstrip("/")
