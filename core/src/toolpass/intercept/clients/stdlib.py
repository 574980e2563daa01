"""``http.client`` (and so ``urllib.request``): ``HTTPConnection.request``."""

from __future__ import annotations

import http.client
from contextvars import ContextVar
from typing import Any

from toolpass.intercept.check import as_bytes, check

#: Set while an outer hook (urllib3) has checked the request already.
checked_above: ContextVar[bool] = ContextVar("toolpass_checked_above", default=False)
_original = http.client.HTTPConnection.request


def _url(conn: http.client.HTTPConnection, target: str) -> str:
    if target.startswith(("http://", "https://")):
        return target  # an absolute form, through a proxy
    scheme = "https" if isinstance(conn, http.client.HTTPSConnection) else "http"
    host = getattr(conn, "_tunnel_host", None) or conn.host
    port = getattr(conn, "_tunnel_port", None) or conn.port
    return f"{scheme}://{host}:{port}{target}"


def _request(
    self: http.client.HTTPConnection,
    method: str,
    url: str,
    body: Any = None,
    headers: Any = None,
    **kw: Any,
) -> None:
    if not checked_above.get():
        check(method, _url(self, url), headers, as_bytes(body))
    _original(self, method, url, body, headers or {}, **kw)


def install() -> None:
    http.client.HTTPConnection.request = _request  # type: ignore[method-assign]


def uninstall() -> None:
    http.client.HTTPConnection.request = _original  # type: ignore[method-assign]
