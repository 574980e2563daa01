"""websocket-client (``websocket.WebSocket().connect``, ``create_connection``,
``WebSocketApp``; the kubernetes client's exec, attach and port-forward): each opening
handshake, and each redirected one, is checked as a ``GET`` to the http(s) URL before it is
written to the socket."""

from __future__ import annotations

from typing import Any

from websocket import _core

from toolpass.intercept.check import check
from toolpass.intercept.clients import Patch

DISTRIBUTION = "websocket-client"
TESTED = ">=1.6,<2"


def headers(given: Any) -> dict[str, str]:
    """The ``header=`` option (a dict, or a list of ``"Name: value"`` lines) as a dict."""
    if not given:
        return {}
    if isinstance(given, dict):
        return {str(k): str(v) for k, v in given.items() if v is not None}
    found: dict[str, str] = {}
    for line in given:
        name, _, value = str(line).partition(":")
        found[name.strip()] = value.strip()
    return found


def _handshake(original: Any) -> Any:
    def handshake(sock: Any, url: str, *args: Any, **options: Any) -> Any:
        check("GET", url, headers(options.get("header")), b"")
        return original(sock, url, *args, **options)

    return handshake


def patches() -> list[Patch]:
    params = ("sock", "url", "hostname", "port", "resource", "options")
    return [Patch(_core, "handshake", _handshake, params)]
