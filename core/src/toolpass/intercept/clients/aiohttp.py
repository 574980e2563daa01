"""aiohttp: ``ClientRequest.send``, once per request and per redirect."""

from __future__ import annotations

from typing import Any

from aiohttp import payload
from aiohttp.client_reqrep import ClientRequest

from toolpass.intercept.check import acheck

_original = ClientRequest.send


def _body(body: Any) -> bytes | None:
    if body is None or body == b"":
        return b""
    if isinstance(body, payload.BytesPayload):
        return bytes(body._value)
    return None  # a stream: not read here


async def _send(self: ClientRequest, conn: Any) -> Any:
    await acheck(self.method, str(self.url), self.headers, _body(self.body))
    return await _original(self, conn)


def install() -> None:
    ClientRequest.send = _send  # type: ignore[method-assign]


def uninstall() -> None:
    ClientRequest.send = _original  # type: ignore[method-assign]
