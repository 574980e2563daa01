"""The hooks of httpx, and of its fork httpx2 (same internals): ``Client._send_single_request``,
sync and async, whatever the transport (a custom one, a mount, ``MockTransport``), once per
request and per redirect. Transports that reach the network go through httpcore (or
httpcore2), hooked below it (see ``_httpcore``)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from types import ModuleType
from typing import Any

from toolpass.intercept.check import acheck, apeek, check, checked_above, peek
from toolpass.intercept.clients import Patch
from toolpass.intercept.guard import fragment


def patches_for(httpx: ModuleType) -> list[Patch]:
    """The patches for ``httpx`` (the module: httpx or httpx2)."""

    class Replay(httpx.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, chunks: Iterable[bytes]) -> None:
            self._chunks = chunks

        def __iter__(self) -> Iterator[bytes]:
            yield from self._chunks

    class AsyncReplay(httpx.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, chunks: AsyncIterable[bytes]) -> None:
            self._chunks = chunks

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._chunks:
                yield chunk

    def body(request: Any) -> bytes | None:
        if isinstance(request.stream, httpx.ByteStream):
            return request.read()  # type: ignore[no-any-return]
        seen, replay = peek(request.stream)
        request.stream = httpx.ByteStream(seen) if seen is not None else Replay(replay)
        return seen

    async def abody(request: Any) -> bytes | None:
        if isinstance(request.stream, httpx.ByteStream):
            return await request.aread()  # type: ignore[no-any-return]
        seen, replay = await apeek(request.stream)
        request.stream = httpx.ByteStream(seen) if seen is not None else AsyncReplay(replay)
        return seen

    def wrap_send(original: Any) -> Any:
        def send(self: Any, request: Any) -> Any:
            _target(request)
            seen = body(request)
            check(request.method, _url(request), request.headers, seen, raw=_as_given(request))
            token = checked_above.set(request.extensions)
            try:
                return original(self, request)
            finally:
                checked_above.reset(token)

        return send

    def wrap_asend(original: Any) -> Any:
        async def send(self: Any, request: Any) -> Any:
            _target(request)
            seen = await abody(request)
            raw = _as_given(request)
            await acheck(request.method, _url(request), request.headers, seen, raw=raw)
            token = checked_above.set(request.extensions)
            try:
                return await original(self, request)
            finally:
                checked_above.reset(token)

        return send

    return [
        Patch(httpx.Client, "_send_single_request", wrap_send, ("self", "request")),
        Patch(httpx.AsyncClient, "_send_single_request", wrap_asend, ("self", "request")),
    ]


def _target(request: Any) -> None:
    """Refuse a ``target`` extension carrying a fragment (h11 writes it as given)."""
    target = request.extensions.get("target")
    if target is not None:
        text = target.decode("latin-1") if isinstance(target, bytes) else str(target)
        fragment(request.method, text, _url(request))


def _as_given(request: Any) -> bool:
    """Whether the body is written as it is (h11 chunks a body under Transfer-Encoding)."""
    return "transfer-encoding" not in request.headers


def _url(request: Any) -> str:
    """The URL the request goes to: a ``target`` extension replaces the URL's path."""
    target = request.extensions.get("target")
    if target is None:
        return str(request.url)
    path = target.decode("ascii") if isinstance(target, bytes) else str(target)
    return f"{request.url.scheme}://{request.url.netloc.decode('ascii')}{path}"
