"""aiohttp: ``ClientRequest.send``, once per request, per redirect, and per WebSocket
handshake (``ClientSession.ws_connect`` sends its upgrade through it). A proxy's ``CONNECT``
is not a request of the tool's: the request through the tunnel is checked.

Bodies: aiohttp's payloads can be sent again (redirects reuse them), so a body is read
through ``as_bytes`` once every stream in it is known to fit ``BODY_LIMIT``: a file by its
size, an async iterable by reading it into the payload's own cache."""

from __future__ import annotations

from typing import Any

from aiohttp import payload
from aiohttp.client_reqrep import ClientRequest
from aiohttp.multipart import MultipartWriter

from toolpass.intercept import check as hook
from toolpass.intercept.check import acheck, apeek
from toolpass.intercept.clients import Patch

DISTRIBUTION = "aiohttp"
# 3.12.4 is the first with the payload internals the hook reads (as_bytes, _cached_chunks).
TESTED = ">=3.12.4,<4"


async def _budget(body: payload.Payload, left: int) -> int | None:
    """What is left of ``left`` bytes once ``body`` is readable without consuming it, or
    None when it is not (too big, a stream that cannot be read twice, a kind not known)."""
    if isinstance(body, payload.BytesPayload):
        return left - len(body._value)
    if isinstance(body, payload.IOBasePayload):
        size = body.size
        return None if size is None else left - size
    if isinstance(body, payload.AsyncIterablePayload):
        return await _cache(body, left)
    if isinstance(body, MultipartWriter):
        for part, *_ in body:
            left_after = await _budget(part, left)
            if left_after is None:
                return None
            left = left_after
        return left
    return None


async def _cache(body: payload.AsyncIterablePayload, left: int) -> int | None:
    """Read an async iterable into the payload's cache (as its ``as_bytes`` would); past
    the limit, put back a replay of what was read, followed by the rest."""
    if body._cached_chunks is not None:
        return left - sum(map(len, body._cached_chunks))
    if body._iter is None:
        return left
    seen, replay = await apeek(body._iter)
    if seen is None or len(seen) > left:
        body._iter = aiter(replay)
        return None
    body._cached_chunks, body._iter = list(replay), None  # type: ignore[call-overload]
    return left - len(seen)


async def _body(body: Any) -> bytes | None:
    if not body:
        return b""
    if isinstance(body, payload.BytesPayload):
        return bytes(body._value)
    left = await _budget(body, hook.BODY_LIMIT)
    if left is None or left < 0:
        return None
    data: bytes = await body.as_bytes()
    return data


def _peer(request: ClientRequest) -> str | None:
    """The proxy a plain-http request is written to in absolute form (https tunnels)."""
    proxy = request.proxy
    if proxy is None or request.url.scheme.lower() != "http":
        return None
    host = str(proxy.raw_host)
    return f"{proxy.scheme}://{f'[{host}]' if ':' in host else host}:{proxy.port}/"


def _send(original: Any) -> Any:
    async def send(self: ClientRequest, conn: Any) -> Any:
        if self.method != "CONNECT":
            seen, raw = await _body(self.body), not self.chunked  # chunked: aiohttp frames it
            await acheck(self.method, str(self.url), self.headers, seen, raw=raw, peer=_peer(self))
        return await original(self, conn)

    return send


def patches() -> list[Patch]:
    return [Patch(ClientRequest, "send", _send, ("self", "conn"))]
