"""urllib3 (and so requests, PyGithub, boto3, the kubernetes client):
``HTTPConnectionPool.urlopen``, once per request and per redirect."""

from __future__ import annotations

from typing import Any

from urllib3.connectionpool import HTTPConnectionPool

from toolpass.intercept.check import as_bytes, check
from toolpass.intercept.clients.stdlib import checked_above

_original = HTTPConnectionPool.urlopen


def _url(pool: HTTPConnectionPool, target: str) -> str:
    if target.startswith(("http://", "https://")):
        return target
    return f"{pool.scheme}://{pool.host}:{pool.port}{target}"


def _urlopen(
    self: HTTPConnectionPool,
    method: str,
    url: str,
    body: Any = None,
    headers: Any = None,
    *args: Any,
    **kw: Any,
) -> Any:
    check(method, _url(self, url), headers, as_bytes(body))
    token = checked_above.set(True)
    try:
        return _original(self, method, url, body, headers, *args, **kw)
    finally:
        checked_above.reset(token)


def install() -> None:
    HTTPConnectionPool.urlopen = _urlopen  # type: ignore[method-assign]


def uninstall() -> None:
    HTTPConnectionPool.urlopen = _original  # type: ignore[method-assign]
