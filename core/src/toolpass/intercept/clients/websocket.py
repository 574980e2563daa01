"""websocket-client (``websocket.WebSocket().connect``, ``create_connection``,
``WebSocketApp``; the kubernetes client's exec, attach and port-forward): each opening
handshake, and each redirected one, is checked as a ``GET`` to the http(s) URL before it is
written to the socket. websocket-client writes its options (``header``, ``host``,
``origin``, ``cookie``, ``connection``) as lines without looking at them, so the check reads
the very lines it writes (``_get_handshake_headers``): its target, Host and every header."""

from __future__ import annotations

from typing import Any

from websocket import _core
from websocket import _handshake as wire

from toolpass.intercept.check import check
from toolpass.intercept.clients import Patch

DISTRIBUTION = "websocket-client"
TESTED = ">=1.6,<2"


def written(lines: list[str]) -> dict[str, str]:
    """The header lines of a handshake as a dict (a line that is no ``name: value`` keeps a
    name that is no token, so it is refused)."""
    found: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        name = name if colon else f"(no colon) {line}"
        value = value.strip(" \t")
        found[name] = f"{found[name]}, {value}" if name in found else value
    return found


def _handshake(original: Any) -> Any:
    def handshake(
        sock: Any, url: str, hostname: str, port: int, resource: str, **options: Any
    ) -> Any:
        lines, _ = wire._get_handshake_headers(resource, url, hostname, port, options)
        host = f"[{hostname}]" if ":" in hostname else hostname
        secure = url[:4].lower() == "wss:"
        target = f"{'https' if secure else 'http'}://{host}:{port}{resource}"
        check("GET", target, written([line for line in lines[1:] if line]), b"")
        return original(sock, url, hostname, port, resource, **options)

    return handshake


def patches() -> list[Patch]:
    params = ("sock", "url", "hostname", "port", "resource", "options")
    return [Patch(_core, "handshake", _handshake, params)]
