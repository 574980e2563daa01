"""httpx, sync and async, whatever the transport (a custom one, a mount, ``MockTransport``):
``Client._send_single_request``, once per request and per redirect. Transports that reach
the network go through httpcore, hooked below (see ``clients.httpcore``)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

import httpx

from toolpass.intercept.check import acheck, apeek, check, checked_above, peek
from toolpass.intercept.clients import Patch

DISTRIBUTION = "httpx"
TESTED = ">=0.27,<1"


class _Replay(httpx.SyncByteStream):
    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


class _AsyncReplay(httpx.AsyncByteStream):
    def __init__(self, chunks: AsyncIterable[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk


def _url(request: httpx.Request) -> str:
    """The URL the request goes to: a ``target`` extension replaces the URL's path."""
    target = request.extensions.get("target")
    if target is None:
        return str(request.url)
    path = target.decode("ascii") if isinstance(target, bytes) else str(target)
    return f"{request.url.scheme}://{request.url.netloc.decode('ascii')}{path}"


def _body(request: httpx.Request) -> bytes | None:
    if isinstance(request.stream, httpx.ByteStream):
        return request.read()
    seen, replay = peek(request.stream)
    request.stream = httpx.ByteStream(seen) if seen is not None else _Replay(replay)
    return seen


async def _abody(request: httpx.Request) -> bytes | None:
    if isinstance(request.stream, httpx.ByteStream):
        return await request.aread()
    seen, replay = await apeek(request.stream)  # type: ignore[arg-type]
    request.stream = httpx.ByteStream(seen) if seen is not None else _AsyncReplay(replay)
    return seen


def _send(original: Any) -> Any:
    def send(self: httpx.Client, request: httpx.Request) -> Any:
        check(request.method, _url(request), request.headers, _body(request))
        token = checked_above.set(request.extensions)
        try:
            return original(self, request)
        finally:
            checked_above.reset(token)

    return send


def _asend(original: Any) -> Any:
    async def send(self: httpx.AsyncClient, request: httpx.Request) -> Any:
        await acheck(request.method, _url(request), request.headers, await _abody(request))
        token = checked_above.set(request.extensions)
        try:
            return await original(self, request)
        finally:
            checked_above.reset(token)

    return send


def patches() -> list[Patch]:
    return [
        Patch(httpx.Client, "_send_single_request", _send, ("self", "request")),
        Patch(httpx.AsyncClient, "_send_single_request", _asend, ("self", "request")),
    ]
