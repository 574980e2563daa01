"""The one entry point every client hook calls, sync or async, and the body reading the
hooks share: a stream is read up to ``BODY_LIMIT`` for the check and then sent as it was."""

from __future__ import annotations

import io
import itertools
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from toolpass.intercept import context
from toolpass.intercept.guard import Question, conclude, prepare
from toolpass.outcome.audit import AuditEvent, emit
from toolpass.outcome.errors import ActionRefused

if TYPE_CHECKING:
    from toolpass.intercept.call import CallKit

#: The toolkit that installed the hooks last: its sinks hear requests no call owns.
installed_by: list[CallKit] = []
#: While a hooked layer sends a request it checked: what identifies that request to the
#: hooked layer below it (a connection, an extensions dict), so that layer does not check it
#: again, while any other request (one a body's generator sends, say) is still checked.
checked_above: ContextVar[object | None] = ContextVar("toolpass_checked_above", default=None)
#: A streamed body is read this far for the check; past it, the check sees ``None``.
BODY_LIMIT = 16 * 1024 * 1024


def _kit() -> CallKit | None:
    scope = context.current()
    if scope is not None:
        return scope.kit
    return installed_by[-1] if installed_by and context.calls_running() else None


def _question(
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    body: bytes | None,
    raw: bool,
    peer: str | None,
) -> tuple[CallKit, Question] | None:
    kit = _kit()
    if kit is None or kit.settings.permissions is None:
        return None
    question = prepare(kit, kit.router, method, url, headers, body, raw, peer)
    return None if question is None else (kit, question)


def _ask(q: Question) -> tuple[Any, ...]:
    return (q.user, q.connection, q.match.action, q.match.resource)


def check(
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    body: bytes | None,
    raw: bool = False,
    peer: str | None = None,
) -> None:
    """Check a request about to be sent; raises ``ActionRefused`` when it may not go.
    ``raw``: the client writes ``body`` as it is, so it must end where the headers say.
    ``peer``: the origin an absolute-form target is written to."""
    with _Late() as late:
        try:
            found = _question(method, _http(url), headers, body, raw, peer)
            if found is not None:
                kit, q = found
                try:
                    decision = kit.settings.permissions.check(*_ask(q))
                except Exception as exc:
                    decision = _failed(exc)
                conclude(q, decision)
        except ActionRefused as refused:
            _observed(refused, late)


async def acheck(
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    body: bytes | None,
    raw: bool = False,
    peer: str | None = None,
) -> None:
    """``check`` for async clients: the engine is asked without blocking the loop."""
    with _Late() as late:
        try:
            found = _question(method, _http(url), headers, body, raw, peer)
            if found is not None:
                kit, q = found
                try:
                    decision = await kit.settings.permissions.acheck(*_ask(q))
                except Exception as exc:
                    decision = _failed(exc)
                conclude(q, decision)
        except ActionRefused as refused:
            _observed(refused, late)


def _observed(refused: ActionRefused, late: _Late) -> None:
    """A refused request of a call in observe mode goes: what was refused is noted on the
    call's event (its action keeps the verdict), or on the request's own when the call has
    returned. Any other call's refusal is raised."""
    scope = context.current()
    if scope is None or scope.event.mode != "observe":
        raise refused
    if scope.refused is refused:
        scope.refused = None
    for request, found in list(scope.refused_requests.items()):
        if found is refused:
            del scope.refused_requests[request]
    if late.start >= 0:
        late.would = refused
    else:
        scope.event.would(refused.code, refused.message, refused.detail or None)


class _Late:
    """Around the check of a request sent after its call returned (from a thread the call
    started): the call's audit event is out already, so the request gets one of its own."""

    __slots__ = ("scope", "start", "would")

    def __enter__(self) -> _Late:
        scope = self.scope = context.current()
        self.start = len(scope.event.actions) if scope is not None and scope.ended else -1
        self.would: ActionRefused | None = None  # observe mode: what it would have refused
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        scope = self.scope
        if scope is None or self.start < 0:
            return
        event = AuditEvent(scope.spec.name, scope.event.effect)
        event.user, event.session_id = scope.event.user, scope.event.session_id
        event.actions = scope.event.actions[self.start :]
        event.outcome = "refused" if error is not None else "ok"
        event.code = getattr(error, "code", None)
        event.mode = scope.event.mode
        if self.would is not None:
            event.would(self.would.code, self.would.message, self.would.detail or None)
        event.detail = "a request sent after the call returned"
        event.finish()
        emit(event, scope.kit.sinks)


def _failed(exc: Exception) -> Any:
    from toolpass.wire.decision import Decision

    return Decision.unknown(f"the permission engine failed: {type(exc).__name__}: {exc}")


def _http(url: str) -> str:
    """A WebSocket URL as the http(s) URL its handshake is sent to (ws -> http, wss -> https)."""
    scheme, colon, rest = url.partition(":")
    if scheme.lower() in ("ws", "wss") and colon:
        return f"http{scheme[2:]}:{rest}"
    return url


# --- bodies --------------------------------------------------------------------------------


def peek(body: Any) -> tuple[bytes | None, Any]:
    """``(what the check sees, what to send instead of body)``. Bytes and text are seen
    whole; a seekable file is read up to ``BODY_LIMIT`` and put back where it was; any
    other file or iterable is read up to the limit and replaced by a replay of the same
    chunks followed by the rest. Past the limit, or for a body of no known kind, the check
    sees ``None``; the bytes sent are always the ones the caller gave."""
    if body is None:
        return b"", None
    if isinstance(body, bytes):
        return body, body
    if isinstance(body, str):
        return body.encode("utf-8", "surrogateescape"), body
    try:
        view = memoryview(body)
    except TypeError:
        pass
    else:
        return (view.tobytes() if view.nbytes <= BODY_LIMIT else None), body
    if hasattr(body, "read"):
        return _peek_file(body)
    if isinstance(body, Iterable):
        return _peek_chunks(iter(body))
    return None, body


def _peek_file(file: Any) -> tuple[bytes | None, Any]:
    seekable = getattr(file, "seekable", None)
    if seekable is not None and seekable():
        start = file.tell()
        head = file.read(BODY_LIMIT + 1)
        file.seek(start)
        return _bounded(_as_bytes(head)), file
    end = "" if isinstance(file, io.TextIOBase) else b""
    return _peek_chunks(iter(lambda: file.read(65536), end))


class Chunks(list[Any]):
    """A body's chunks, read whole for the check, to send again: iterable sync and async."""

    async def __aiter__(self) -> AsyncIterator[Any]:
        for chunk in self:
            yield chunk


def _peek_chunks(chunks: Iterator[Any]) -> tuple[bytes | None, Any]:
    head = Chunks()
    size = 0
    for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size > BODY_LIMIT:
            return None, itertools.chain(head, chunks)
    return b"".join(map(_as_bytes, head)), head


async def apeek(body: AsyncIterable[Any]) -> tuple[bytes | None, AsyncIterable[Any]]:
    """``peek`` for an async iterable: what the check sees, and a replay to send instead."""
    chunks = aiter(body)
    head = Chunks()
    size = 0
    async for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size > BODY_LIMIT:
            return None, _replay(head, chunks)
    return b"".join(map(_as_bytes, head)), head


async def _replay(head: list[Any], rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    for chunk in head:
        yield chunk
    async for chunk in rest:
        yield chunk


def _as_bytes(chunk: Any) -> bytes:
    return chunk.encode("utf-8", "surrogateescape") if isinstance(chunk, str) else bytes(chunk)


def _bounded(data: bytes) -> bytes | None:
    return data if len(data) <= BODY_LIMIT else None
