"""The hooks of httpcore, and of its fork httpcore2 (same internals), under httpx's own
transports or used directly: each protocol connection's ``handle_request``, the layer every
pool, proxy and connection reaches. A request httpx checked already (its extensions dict
marks it) is not checked again; a proxy's ``CONNECT`` is not a request of the tool's."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

from toolpass.intercept.check import acheck, apeek, check, checked_above, peek
from toolpass.intercept.clients import Patch
from toolpass.intercept.guard import fragment, proxied
from toolpass.intercept.router import absolute

_PORTS = {b"http": 80, b"https": 443, b"ws": 80, b"wss": 443}


def _url(url: Any) -> str:
    target = url.target.decode("latin-1")
    if absolute(target):
        return str(target)  # the absolute form, through a forwarding proxy (any case)
    host = url.host.decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    port = url.port or _PORTS.get(url.scheme, 0)
    return f"{url.scheme.decode('ascii')}://{host}:{port}{target}"


def _peer(url: Any) -> str | None:
    """The origin the request is written to, when its target is in absolute form."""
    if not absolute(url.target.decode("latin-1")):
        return None
    host = url.host.decode("ascii")
    host = f"[{host}]" if ":" in host else host
    return f"{url.scheme.decode('ascii')}://{host}:{url.port or _PORTS.get(url.scheme, 0)}/"


def _headers(request: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in request.headers:
        key, text = name.decode("latin-1"), value.decode("latin-1")
        found[key] = f"{found[key]}, {text}" if key in found else text
    return found


def _as_given(headers: dict[str, str]) -> bool:
    """Whether h11 writes the body as it is (it chunks one under Transfer-Encoding)."""
    return not any(name.lower() == "transfer-encoding" for name in headers)


def _skip(request: Any) -> bool:
    return bool(request.method == b"CONNECT" or checked_above.get() is request.extensions)


def _proxied(request: Any) -> None:
    """A request httpx checked, written here in absolute form (httpx's ``proxy=``): the
    server it is written to must be a proxy, not a connection's own server."""
    peer = _peer(request.url)
    if peer is not None and request.method != b"CONNECT":
        proxied(request.method.decode("ascii"), _url(request.url), peer)


def _handle(original: Any) -> Any:
    def handle_request(self: Any, request: Any) -> Any:
        if not _skip(request):
            seen, request.stream = peek(request.stream)
            headers = _headers(request)
            method = request.method.decode("ascii")
            url, raw = request.url, _as_given(headers)
            fragment(method, url.target.decode("latin-1"), _url(url))
            check(method, _url(url), headers, seen, raw=raw, peer=_peer(url))
        else:
            _proxied(request)
        return original(self, request)

    return handle_request


def _ahandle(original: Any) -> Any:
    async def handle_async_request(self: Any, request: Any) -> Any:
        if not _skip(request):
            seen, request.stream = await apeek(request.stream)
            method, headers = request.method.decode("ascii"), _headers(request)
            url, raw = request.url, _as_given(headers)
            fragment(method, url.target.decode("latin-1"), _url(url))
            await acheck(method, _url(url), headers, seen, raw=raw, peer=_peer(url))
        else:
            _proxied(request)
        return await original(self, request)

    return handle_async_request


def patches_for(httpcore: ModuleType) -> list[Patch]:
    """The patches for ``httpcore`` (the module: httpcore or httpcore2)."""
    params = ("self", "request")
    found = [
        Patch(httpcore.HTTP11Connection, "handle_request", _handle, params),
        Patch(httpcore.AsyncHTTP11Connection, "handle_async_request", _ahandle, params),
    ]
    if importlib.util.find_spec("h2") is not None:
        found += [
            Patch(httpcore.HTTP2Connection, "handle_request", _handle, params),
            Patch(httpcore.AsyncHTTP2Connection, "handle_async_request", _ahandle, params),
        ]
    return found
