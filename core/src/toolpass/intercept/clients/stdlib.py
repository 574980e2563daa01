"""``http.client`` (and so ``urllib.request``, and urllib3's connections): checked at
``endheaders``, the moment the request line and headers leave, whether they were built by
``request()`` or by hand with ``putrequest``/``putheader``."""

from __future__ import annotations

import http.client
from contextvars import ContextVar
from typing import Any

from toolpass.intercept.check import check, checked_above, peek
from toolpass.intercept.clients import Patch
from toolpass.intercept.router import absolute

DISTRIBUTION = None
TESTED = ""
Conn = http.client.HTTPConnection
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
#: The connection whose ``request()`` runs: the body it gives ``endheaders`` is the whole body.
_whole_body: ContextVar[Conn | None] = ContextVar("toolpass_whole_body", default=None)


class _Pending:
    """A request begun with ``putrequest``: its method, target and headers so far."""

    __slots__ = ("headers", "method", "target")

    def __init__(self, method: str, target: str) -> None:
        self.method = method
        self.target = target
        self.headers: list[tuple[Any, tuple[Any, ...]]] = []  # as putheader got them

    def header_map(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for header, values in self.headers:
            name, value = _text(header), ", ".join(map(_text, values))
            found[name] = f"{found[name]}, {value}" if name in found else value
        return found


def url(conn: Any, target: str, tls: bool) -> str:
    """The absolute URL a request with this target goes to over ``conn``."""
    if absolute(target):
        return target  # the absolute form, through a proxy (any case of any scheme)
    host = getattr(conn, "_tunnel_host", None) or conn.host
    port = getattr(conn, "_tunnel_port", None) or conn.port
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{port}{target}"


def _tls(conn: Conn) -> bool:
    """Whether ``conn`` speaks TLS: an ``HTTPSConnection``, or a subclass of
    ``HTTPConnection`` that is one in all but name (urllib3's)."""
    return isinstance(conn, http.client.HTTPSConnection) or conn.default_port == 443


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def _request(original: Any) -> Any:
    def request(self: Conn, *args: Any, **kw: Any) -> None:
        token = _whole_body.set(self)
        try:
            original(self, *args, **kw)
        finally:
            _whole_body.reset(token)

    return request


def _putrequest(original: Any) -> Any:
    def putrequest(self: Conn, method: str, url: str, *args: Any, **kw: Any) -> None:
        self._toolpass = None if checked_above.get() is self else _Pending(method, url)  # type: ignore[attr-defined]
        original(self, method, url, *args, **kw)

    return putrequest


def _putheader(original: Any) -> Any:
    def putheader(self: Conn, header: Any, *values: Any) -> None:
        pending = getattr(self, "_toolpass", None)
        if pending is not None:
            pending.headers.append((header, values))
        original(self, header, *values)

    return putheader


def _endheaders(original: Any) -> Any:
    def endheaders(self: Conn, message_body: Any = None, **kw: Any) -> None:
        pending: _Pending | None = getattr(self, "_toolpass", None)
        if pending is not None:
            self._toolpass = None  # type: ignore[attr-defined]
            if message_body is not None:
                seen, message_body = peek(message_body)
            elif _whole_body.get() is self or pending.method.upper() in _SAFE:
                seen = b""
            else:
                seen = None  # a body may follow through send(): unknown
            target = url(self, pending.target, _tls(self))
            check(pending.method, target, pending.header_map(), seen)
        original(self, message_body, **kw)

    return endheaders


def patches() -> list[Patch]:
    return [
        Patch(Conn, "request", _request, ("self", "method", "url", "body", "headers", "...")),
        Patch(Conn, "putrequest", _putrequest, ("self", "method", "url", "...")),
        Patch(Conn, "putheader", _putheader, ("self", "header", "values")),
        Patch(Conn, "endheaders", _endheaders, ("self", "message_body", "encode_chunked")),
    ]
