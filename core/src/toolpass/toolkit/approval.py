"""Approval out of band: a call waits until a person approves it, then runs once."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from toolpass.outcome.errors import ApprovalPending, ToolRefused
from toolpass.rules.secrets import find_secret, secret_name

DEFAULT_TTL = 15 * 60.0
#: How much of one argument a preview shows before it says what it left out.
PREVIEW_LIMIT = 2000


def preview_of(arguments: Mapping[str, Any]) -> str:
    """What a person approving a call reads of its arguments: every value whole (as Python
    writes it), except that a long value shows its first ``PREVIEW_LIMIT`` characters and
    then says how much it left out, with the whole value's digest; a value that is a secret
    (by its name, or a credential's shape) shows only its digest. Nothing is cut silently;
    ``request.arguments[name]`` holds each value."""
    return "\n".join(f"  {name} = {_shown(name, value)}" for name, value in arguments.items())


def _shown(name: str, value: Any) -> str:
    text = repr(value)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    whole = f"{len(text)} characters, sha256 {digest}; see request.arguments[{name!r}]"
    kind = "a secret" if secret_name(name) else find_secret(text)
    if kind is not None:
        return f"[{kind}, not shown: {whole}]"
    if len(text) <= PREVIEW_LIMIT:
        return text
    return f"{text[:PREVIEW_LIMIT]}\n    [... not shown: the rest of {whole}]"


class ApprovalRequest:
    """One call waiting for (or holding) a person's decision."""

    __slots__ = (
        "_in_use",
        "arguments",
        "created",
        "decided_at",
        "decided_by",
        "effect",
        "id",
        "key",
        "preview",
        "reason",
        "reasons",
        "session_id",
        "status",
        "tool",
        "user",
    )

    def __init__(
        self,
        *,
        key: tuple[Any, ...],
        user: str,
        session_id: str,
        tool: str,
        effect: str | None,
        arguments: Mapping[str, Any],
        reasons: tuple[str, ...],
        preview: str,
        now: float,
    ) -> None:
        self.id = secrets.token_hex(6)
        self.key = key
        self.user = user
        self.session_id = session_id
        self.tool = tool
        self.effect = effect
        self.arguments = dict(arguments)
        self.reasons = reasons
        self.preview = preview
        self.created = now
        self.status = "pending"  # pending, approved, denied, spent, expired
        self.decided_by: str | None = None
        self.decided_at: float | None = None
        self.reason = ""
        self._in_use = False

    def describe(self) -> str:
        """Who asks for what and why, with a preview, for the person deciding."""
        effect = f" ({self.effect})" if self.effect else ""
        why = "; ".join(self.reasons)
        return (
            f"{self.user} wants to run {self.tool}{effect}.\n"
            f"Why approval is needed: {why}.\n"
            f"Preview:\n{self.preview}\n"
            f"Request id: {self.id}"
        )

    def __repr__(self) -> str:
        return f"ApprovalRequest({self.id!r}, {self.tool!r}, user={self.user!r}, {self.status})"


class Grant:
    """An approved request held by the one call that will run it."""

    __slots__ = ("_queue", "request")

    def __init__(self, queue: ApprovalQueue, request: ApprovalRequest) -> None:
        self._queue = queue
        self.request = request

    def spend(self) -> None:
        """The call reached its body: the approval is used up. Until ``release``, retries of
        the same call are told it is running (rather than asking for a new approval)."""
        self._queue._spend(self.request)

    def release(self) -> None:
        """The call is over: a spent approval is dropped, an unspent one stays for a retry."""
        self._queue._finish(self.request, spent=self.request.status == "spent")


class ApprovalQueue:
    """Holds approval requests until a person decides.

    ``on_request(callback)`` hears each new request; ``approve(id, by=...)`` and
    ``deny(id, by=..., reason=...)`` decide. An approval is bound to the session, the tool,
    the exact arguments, the reasons and the preview, runs its call once, and expires ``ttl``
    seconds after it was granted (a request nobody decides expires ``ttl`` after it was made).
    """

    def __init__(
        self, *, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._by_id: dict[str, ApprovalRequest] = {}
        self._by_key: dict[tuple[Any, ...], ApprovalRequest] = {}
        self.listeners: list[Callable[[ApprovalRequest], object]] = []

    def on_request(
        self, callback: Callable[[ApprovalRequest], object]
    ) -> Callable[[ApprovalRequest], object]:
        """Register ``callback(request)`` for each new request (usable as a decorator)."""
        self.listeners.append(callback)
        return callback

    def pending(self) -> list[ApprovalRequest]:
        """Requests waiting for a decision."""
        with self._lock:
            self._expire()
            return [r for r in self._by_id.values() if r.status == "pending"]

    def get(self, request_id: str) -> ApprovalRequest:
        with self._lock:
            self._expire()
            return self._find(request_id)

    def approve(self, request_id: str, *, by: str) -> ApprovalRequest:
        """Approve a pending request; its call runs on the next retry."""
        return self._decide(request_id, "approved", by, "")

    def deny(self, request_id: str, *, by: str, reason: str = "") -> ApprovalRequest:
        """Deny a pending request; the next retry of its call is refused with the reason."""
        return self._decide(request_id, "denied", by, reason)

    # Internals used by the pipeline.

    def _find(self, request_id: str) -> ApprovalRequest:
        try:
            return self._by_id[request_id]
        except KeyError:
            raise KeyError(f"no approval request {request_id!r} (unknown, used or expired)")

    def _decide(self, request_id: str, status: str, by: str, reason: str) -> ApprovalRequest:
        if not by:
            raise ValueError("say who decides: by='name'")
        with self._lock:
            self._expire()
            req = self._find(request_id)
            if req.status != "pending":
                raise ValueError(f"approval request {request_id} is already {req.status}")
            req.status, req.decided_by, req.reason = status, by, reason
            req.decided_at = self._clock()
            return req

    def _expire(self) -> None:
        now = self._clock()
        for req in list(self._by_id.values()):
            since = req.created
            if req.status == "approved" and req.decided_at is not None:
                since = req.decided_at
            if req.status in ("pending", "approved") and not req._in_use and now - since > self.ttl:
                req.status = "expired"
                self._drop(req)

    def _drop(self, req: ApprovalRequest) -> None:
        self._by_id.pop(req.id, None)
        if self._by_key.get(req.key) is req:
            del self._by_key[req.key]

    def _claim(
        self, key: tuple[Any, ...], make: Callable[[float], ApprovalRequest]
    ) -> tuple[Grant | None, ApprovalRequest]:
        """The grant for an approved request with this key, else the (possibly new) request.

        Raises ``ApprovalPending`` while the request waits and ``ToolRefused`` once denied.
        Returns ``(None, request)`` for a new request, so the caller can notify listeners.
        """
        with self._lock:
            self._expire()
            req = self._by_key.get(key)
            if req is None:
                req = make(self._clock())
                self._by_id[req.id] = req
                self._by_key[key] = req
                return None, req
            if req.status == "denied":
                self._drop(req)
                why = f" Their reason: {req.reason}." if req.reason else ""
                raise ToolRefused(
                    "approval_denied",
                    f"{req.decided_by} denied this call (request {req.id}).{why} "
                    "Do not retry it; tell the user it was denied.",
                    detail=f"denied by {req.decided_by}: {req.reason}",
                )
            if req.status == "approved" and not req._in_use:
                req._in_use = True
                return Grant(self, req), req
            raise pending(req, running=req._in_use)

    def _spend(self, req: ApprovalRequest) -> None:
        with self._lock:
            req.status = "spent"

    def _finish(self, req: ApprovalRequest, *, spent: bool) -> None:
        with self._lock:
            req._in_use = False
            if spent:
                req.status = "spent"
                self._drop(req)


def pending(req: ApprovalRequest, *, running: bool = False) -> ApprovalPending:
    if running:
        text = (
            f"This approved call is running already (request {req.id}). "
            "Wait for its result instead of calling it again."
        )
    else:
        text = (
            f"This call needs a person's approval (request {req.id}: "
            f"{'; '.join(req.reasons)}). Tell the user it is waiting for their approval, and "
            "call the tool again with exactly the same arguments once they have approved it."
        )
    return ApprovalPending(text, request_id=req.id, request=req)
