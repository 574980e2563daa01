"""``http.client`` (and so ``urllib.request``, and urllib3's connections): checked at
``endheaders``, the moment the request line and headers leave, whether they were built by
``request()`` or by hand with ``putrequest``/``putheader``.

Every byte a connection writes is held to the request checked: ``send`` writes the header
block, then the body up to the end its headers declare (``framing.Meter``), and nothing else:
bytes past that end, or written outside a request, are refused (the connection is closed if
the request was begun). A CONNECT to a proxy (``_tunnel``) is the connection's own."""

from __future__ import annotations

import http.client
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from toolpass.intercept import context
from toolpass.intercept.check import check, checked_above, peek
from toolpass.intercept.clients import Patch
from toolpass.intercept.framing import Framing, Meter, Misframed, declared
from toolpass.intercept.guard import fragment, misframed_send
from toolpass.intercept.router import absolute

DISTRIBUTION = None
TESTED = ""
Conn = http.client.HTTPConnection
#: The connection whose ``request()`` runs: the body it gives ``endheaders`` is the whole body.
_whole_body: ContextVar[Conn | None] = ContextVar("toolpass_whole_body", default=None)


class _Wire:
    """What a connection may write now: the header block of the request it checked, then
    that request's body as metered."""

    __slots__ = ("headers_sent", "meter", "method", "url")

    def __init__(self, method: str, url: str, framing: Framing) -> None:
        self.method, self.url = method, url
        self.meter = Meter(framing)
        self.headers_sent = False


class _Pending:
    """A request begun with ``putrequest``: its method, target and headers so far."""

    __slots__ = ("checked", "headers", "method", "target")

    def __init__(self, method: str, target: str, checked: bool) -> None:
        self.method = method
        self.target = target
        self.checked = checked  # checked here: no hooked layer above checked it
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


def peer(conn: Any, target: str, tls: bool) -> str | None:
    """The origin ``conn`` writes to, when ``target`` is in absolute form (else None)."""
    return url(conn, "/", tls) if absolute(target) else None


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
        self._toolpass = _Pending(method, url, checked_above.get() is not self)  # type: ignore[attr-defined]
        self._toolpass_wire = None  # type: ignore[attr-defined]  # nothing may be sent yet
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
    def endheaders(self: Conn, message_body: Any = None, *, encode_chunked: bool = False) -> None:
        pending: _Pending | None = getattr(self, "_toolpass", None)
        if pending is not None:
            self._toolpass = None  # type: ignore[attr-defined]
            message_body = _checked(self, pending, message_body, encode_chunked)
        original(self, message_body, encode_chunked=encode_chunked)

    return endheaders


def _checked(self: Conn, pending: _Pending, message_body: Any, encode_chunked: bool) -> Any:
    """Check the request ``endheaders`` is about to send (unless a layer above checked it),
    hold its writes to its framing; returns the body to send instead of ``message_body``."""
    tls = _tls(self)
    target = url(self, pending.target, tls)
    fragment(pending.method, pending.target, target)
    headers = pending.header_map()
    try:
        framing = declared({k.lower(): v for k, v in headers.items()})
        if encode_chunked and not framing.chunked:
            raise Misframed("a body chunked by http.client under a Content-Length")
    except Misframed as exc:
        misframed_send(pending.method, target, str(exc))
        framing = Framing(None, True)  # no call to refuse it for: written as asked
    if message_body is not None:
        seen, message_body = peek(message_body)
    elif _whole_body.get() is self or framing.empty:
        seen = b""
    else:
        seen = None  # the body follows through send(): metered there
    if pending.checked:
        where = peer(self, pending.target, tls)
        check(pending.method, target, headers, seen, raw=not encode_chunked, peer=where)
    if context.current() is not None:
        self._toolpass_wire = _Wire(pending.method, target, framing)  # type: ignore[attr-defined]
    return message_body


def _send(original: Any) -> Any:
    def send(self: Conn, data: Any) -> None:
        if getattr(self, "_toolpass_tunnel", False) or context.current() is None:
            return original(self, data)  # type: ignore[no-any-return]
        wire: _Wire | None = getattr(self, "_toolpass_wire", None)
        if wire is None:
            where = url(self, "/", _tls(self))
            misframed_send("(none)", where, "bytes written outside a request")
        elif not wire.headers_sent:
            wire.headers_sent = True  # the header block ``endheaders`` writes first
        elif isinstance(data, (bytes, bytearray, memoryview)):
            _meter(self, wire, bytes(data))
        else:
            data = _metered(self, wire, _blocks(self, data))
        return original(self, data)  # type: ignore[no-any-return]

    return send


def _meter(conn: Conn, wire: _Wire, data: bytes) -> None:
    try:
        wire.meter.take(data)
    except Misframed as exc:
        conn.close()  # the request was begun: it is never completed
        misframed_send(wire.method, wire.url, str(exc))


def _metered(conn: Conn, wire: _Wire, blocks: Iterator[bytes]) -> Iterator[bytes]:
    for block in blocks:
        _meter(conn, wire, block)
        yield block


def _blocks(conn: Conn, data: Any) -> Iterator[bytes]:
    """What ``send`` writes of a file or an iterable, block by block."""
    if hasattr(data, "read"):
        while block := data.read(conn.blocksize):
            yield block.encode("iso-8859-1") if isinstance(block, str) else bytes(block)
        return
    chunks: Iterable[Any] = data
    for chunk in chunks:
        yield bytes(chunk)


def _tunnel(original: Any) -> Any:
    def tunnel(self: Conn) -> None:
        self._toolpass_tunnel = True  # type: ignore[attr-defined]
        try:
            original(self)
        finally:
            self._toolpass_tunnel = False  # type: ignore[attr-defined]

    return tunnel


def patches() -> list[Patch]:
    return [
        Patch(Conn, "request", _request, ("self", "method", "url", "body", "headers", "...")),
        Patch(Conn, "putrequest", _putrequest, ("self", "method", "url", "...")),
        Patch(Conn, "putheader", _putheader, ("self", "header", "values")),
        Patch(Conn, "endheaders", _endheaders, ("self", "message_body", "encode_chunked")),
        Patch(Conn, "send", _send, ("self", "data")),
        Patch(Conn, "_tunnel", _tunnel, ("self",)),
    ]
