"""The one entry point every client hook calls, sync or async."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolpass.intercept import context
from toolpass.intercept.guard import Question, conclude, prepare

if TYPE_CHECKING:
    from toolpass.toolkit.toolkit import Toolkit

#: The toolkit that installed the hooks last: its sinks hear requests no call owns.
installed_by: list[Toolkit] = []


def _kit() -> Toolkit | None:
    scope = context.current()
    if scope is not None:
        return scope.kit
    return installed_by[-1] if installed_by and context.calls_running() else None


def _question(
    method: str, url: str, headers: Mapping[str, str] | None, body: bytes | None
) -> tuple[Toolkit, Question] | None:
    kit = _kit()
    if kit is None or kit.permissions is None:
        return None
    question = prepare(kit, kit.router, method, url, headers, body)
    return None if question is None else (kit, question)


def _ask(q: Question) -> tuple[Any, ...]:
    return (q.user, q.connection, q.match.action, q.match.resource)


def check(method: str, url: str, headers: Mapping[str, str] | None, body: bytes | None) -> None:
    """Check a request about to be sent; raises ``ActionRefused`` when it may not go."""
    found = _question(method, url, headers, body)
    if found is not None:
        kit, q = found
        try:
            decision = kit.permissions.check(*_ask(q))
        except Exception as exc:
            decision = _failed(exc)
        conclude(q, decision)


async def acheck(
    method: str, url: str, headers: Mapping[str, str] | None, body: bytes | None
) -> None:
    """``check`` for async clients: the engine is asked without blocking the loop."""
    found = _question(method, url, headers, body)
    if found is not None:
        kit, q = found
        try:
            decision = await kit.permissions.acheck(*_ask(q))
        except Exception as exc:
            decision = _failed(exc)
        conclude(q, decision)


def _failed(exc: Exception) -> Any:
    from toolpass.engine.decision import Decision

    return Decision.unknown(f"the permission engine failed: {type(exc).__name__}: {exc}")


def as_bytes(body: object) -> bytes | None:
    """A request body as bytes, or None when it is a stream that cannot be read safely."""
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    return None
