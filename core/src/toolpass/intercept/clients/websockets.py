"""websockets: the opening handshake of every client, checked as a ``GET`` to the
http(s) URL before it is sent. The asyncio client is checked without blocking its loop
(``ClientConnection.handshake``); the threading and trio clients, and any other user of the
sans-I/O ``ClientProtocol``, at ``ClientProtocol.send_request``; the legacy client at its
``handshake``. Each redirect opens a new handshake, checked in turn."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.client import ClientProtocol

from toolpass.intercept.check import acheck, check, checked_above
from toolpass.intercept.clients import Patch

DISTRIBUTION = "websockets"
# 15.0 is the first with ClientProtocol.uri, which the hook reads.
TESTED = ">=15,<18"


def _url(uri: Any, path: str | None = None) -> str:
    """A ``WebSocketURI`` as the http(s) URL of its handshake."""
    host = f"[{uri.host}]" if ":" in uri.host else uri.host
    scheme = "https" if uri.secure else "http"
    return f"{scheme}://{host}:{uri.port}{path or uri.resource_name}"


def _headers(given: Any) -> dict[str, str]:
    if not given:
        return {}
    if hasattr(given, "raw_items"):  # websockets' Headers
        pairs = given.raw_items()
    else:
        pairs = given.items() if hasattr(given, "items") else given
    found: dict[str, str] = {}
    for name, value in pairs:
        found[str(name)] = f"{found[str(name)]}, {value}" if str(name) in found else str(value)
    return found


def _send_request(original: Any) -> Any:
    def send_request(self: ClientProtocol, request: Any) -> None:
        if checked_above.get() is not self:
            check("GET", _url(self.uri, request.path), _headers(request.headers), b"")
        original(self, request)

    return send_request


def _handshake(original: Any) -> Any:
    async def handshake(self: ClientConnection, *args: Any, **kw: Any) -> None:
        given = kw.get("additional_headers", args[0] if args else None)
        await acheck("GET", _url(self.protocol.uri), _headers(given), b"")
        token = checked_above.set(self.protocol)
        try:
            await original(self, *args, **kw)
        finally:
            checked_above.reset(token)

    return handshake


def _legacy_handshake(original: Any) -> Any:
    async def handshake(self: Any, wsuri: Any, *args: Any, **kw: Any) -> None:
        given = kw.get("extra_headers", args[3] if len(args) > 3 else None)
        await acheck("GET", _url(wsuri), _headers(given), b"")
        await original(self, wsuri, *args, **kw)

    return handshake


def _legacy() -> Any:
    """The legacy client, imported without its deprecation warning (so that importing it
    later, as a tool may, finds it hooked); None when this version has none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return importlib.import_module("websockets.legacy.client").WebSocketClientProtocol
        except ImportError:
            return None


def patches() -> list[Patch]:
    found = [
        Patch(ClientProtocol, "send_request", _send_request, ("self", "request")),
        Patch(
            ClientConnection,
            "handshake",
            _handshake,
            ("self", "additional_headers", "user_agent_header"),
        ),
    ]
    legacy = _legacy()
    if legacy is not None:
        params = ("self", "wsuri", "origin", "available_extensions", "available_subprotocols")
        found.append(Patch(legacy, "handshake", _legacy_handshake, (*params, "extra_headers")))
    return found
