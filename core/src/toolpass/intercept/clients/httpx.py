"""httpx, sync and async, whatever the transport: ``Client._send_single_request`` (once per
request and per redirect)."""

from __future__ import annotations

from typing import Any

import httpx

from toolpass.intercept.check import acheck, check

_sync = httpx.Client._send_single_request
_async = httpx.AsyncClient._send_single_request


def _send(self: httpx.Client, request: httpx.Request) -> Any:
    check(request.method, str(request.url), request.headers, request.read())
    return _sync(self, request)


async def _asend(self: httpx.AsyncClient, request: httpx.Request) -> Any:
    await acheck(request.method, str(request.url), request.headers, await request.aread())
    return await _async(self, request)


def install() -> None:
    httpx.Client._send_single_request = _send  # type: ignore[method-assign]
    httpx.AsyncClient._send_single_request = _asend  # type: ignore[method-assign]


def uninstall() -> None:
    httpx.Client._send_single_request = _sync  # type: ignore[method-assign]
    httpx.AsyncClient._send_single_request = _async  # type: ignore[method-assign]
