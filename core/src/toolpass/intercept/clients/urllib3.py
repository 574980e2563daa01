"""urllib3 (and so requests, PyGithub, boto3, the kubernetes client): the connection's
``request``, which every pool, ``PoolManager`` and ``ProxyManager`` path (and every redirect
and retry) ends in, and which a tool can also call itself."""

from __future__ import annotations

import importlib.util
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection

from toolpass.intercept.check import check, checked_above, peek
from toolpass.intercept.clients import Patch
from toolpass.intercept.clients.stdlib import peer, url
from toolpass.intercept.guard import fragment

DISTRIBUTION = "urllib3"
TESTED = ">=2,<3"


def _request(original: Any) -> Any:
    def request(
        self: HTTPConnection,
        method: str,
        target: str,
        body: Any = None,
        headers: Any = None,
        *args: Any,
        **kw: Any,
    ) -> None:
        seen, body = peek(body)
        tls = isinstance(self, HTTPSConnection)
        where = url(self, target, tls)
        fragment(method, target, where)
        check(method, where, headers, seen, raw=_as_given(headers), peer=peer(self, target, tls))
        token = checked_above.set(self)
        try:
            original(self, method, target, body, headers, *args, **kw)
        finally:
            checked_above.reset(token)

    return request


def _as_given(headers: Any) -> bool:
    """Whether urllib3 writes the body as it is: under a Content-Length the tool gave (under
    a Transfer-Encoding it chunks the body itself; under neither it declares the length)."""
    return bool(headers) and any(str(name).lower() == "content-length" for name in headers)


def patches() -> list[Patch]:
    params = ("self", "method", "url", "body", "headers", "...")
    found = [Patch(HTTPConnection, "request", _request, params)]
    if importlib.util.find_spec("h2") is not None:  # urllib3's opt-in HTTP/2 connection
        try:
            from urllib3.http2.connection import HTTP2Connection
        except ImportError:
            return found
        found.append(Patch(HTTP2Connection, "request", _request, params))
    return found
