"""A call that needs a person, as every adapter pauses and resumes it: the pending request
(``Pending``, and the ``APPROVAL`` type of its payload), the answer a resume carries
(``Answer``), and how that answer is written into the approval queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolpass.toolkit.approval import ApprovalQueue, ApprovalRequest, preview_of
from toolpass.toolkit.spec import ToolCall

#: The ``type`` of the payload a framework's pause carries for a call awaiting approval.
APPROVAL = "toolpass_approval"
_APPROVING = frozenset({"y", "yes", "approve", "approved", "accept", "allow"})
_Decision = Literal["approve", "deny", "edit", "expired"]
#: The decision each word a resume value may say means (any other word denies).
_SAID: dict[str, _Decision] = {
    "approve": "approve",
    "approved": "approve",
    "deny": "deny",
    "denied": "deny",
    "reject": "deny",
    "edit": "edit",
    "expired": "expired",
}


@dataclass(frozen=True)
class Pending:
    """A call waiting for a person, as an adapter pauses its framework for it: the request's
    id, who the call is for, the tool, the call's full arguments, why a person must decide,
    what the person reads (``preview``, ``message``) and when the request expires (the
    queue's clock)."""

    request_id: str
    user: str
    tool: str
    arguments: Mapping[str, Any]
    reasons: tuple[str, ...]
    preview: str
    expires: float
    message: str
    #: When the request was made (the queue's clock).
    created: float
    #: Each argument as the preview shows it (secrets by their digest), for a prompt.
    shown: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, request: ApprovalRequest, ttl: float) -> Pending:
        return cls(
            request_id=request.id,
            user=request.user,
            tool=request.tool,
            arguments=dict(request.arguments),
            reasons=tuple(request.reasons),
            preview=request.preview,
            expires=request.created + ttl,
            created=request.created,
            message=request.describe(),
            shown=request.shown_arguments(),
        )

    def payload(self) -> dict[str, Any]:
        """The pause's value, JSON only: ``type`` (``"toolpass_approval"``), ``request_id``,
        ``tool``, ``user``, ``arguments`` (as the preview shows them), ``reasons``,
        ``preview``, ``expires`` and ``message``."""
        return {
            "type": APPROVAL,
            "request_id": self.request_id,
            "tool": self.tool,
            "user": self.user,
            "arguments": dict(self.shown),
            "reasons": list(self.reasons),
            "preview": self.preview,
            "expires": self.expires,
            "message": self.message,
        }


@dataclass(frozen=True)
class Answer:
    """What a resume carries for a paused call: ``approve``, ``deny`` (with the person's
    ``reason``), ``edit`` (approve with the ``arguments`` the person wrote) or ``expired``
    (nobody answered in time); ``by`` names the person; ``request_id``, when given, is the
    request it answers (an answer naming another request is not taken for this one)."""

    decision: Literal["approve", "deny", "edit", "expired"]
    by: str = ""
    reason: str = ""
    arguments: Mapping[str, Any] | None = None
    request_id: str | None = None

    def __post_init__(self) -> None:
        if self.decision not in ("approve", "deny", "edit", "expired"):
            raise ValueError(f"an answer is approve, deny, edit or expired, not {self.decision!r}")
        if (self.decision == "edit") != isinstance(self.arguments, Mapping):
            raise ValueError("an edit (and only an edit) carries the arguments, as a mapping")

    @classmethod
    def of(cls, value: Any, *, by: str = "") -> Answer:
        """The answer a framework's resume value means: an ``Answer``; ``True`` or ``"y"``/
        ``"yes"``/``"approve"`` approve; a mapping with ``decision`` (or ``type``:
        ``approve``, ``deny``/``reject``, ``edit``, ``expired``) or ``approved`` (True or
        False), and ``by``, ``reason`` (or ``message``), ``arguments`` (or ``args``),
        ``request_id``. Anything else denies (an edit without a mapping of arguments too),
        never raises; ``by`` names the person when it does not."""
        if isinstance(value, Answer):
            return value
        if isinstance(value, Mapping):
            return cls._of_mapping(value, by)
        yes = value is True or (isinstance(value, str) and value.strip().lower() in _APPROVING)
        return cls("approve" if yes else "deny", by=by)

    @classmethod
    def _of_mapping(cls, value: Mapping[str, Any], by: str) -> Answer:
        said = value.get("decision", value.get("type"))
        if said is None:
            said = "approve" if value.get("approved", value.get("approve")) is True else "deny"
        decision = _SAID.get(said, "deny") if isinstance(said, str) else "deny"
        arguments = value.get("arguments", value.get("args"))
        if decision == "edit" and not isinstance(arguments, Mapping):
            decision = "deny"  # an edit without the arguments the person wrote
        named = value.get("by")
        request_id = value.get("request_id")
        return cls(
            decision,
            by=named if isinstance(named, str) and named.strip() else by,
            reason=str(value.get("reason") or value.get("message") or ""),
            arguments=arguments if decision == "edit" else None,
            request_id=request_id if isinstance(request_id, str) else None,
        )


def _record(queue: ApprovalQueue, request_id: str, answer: Answer) -> None:
    """Write a person's answer into the queue's record of the request."""
    by = answer.by or "the application"
    if answer.decision == "approve":
        queue.approve(request_id, by=by)
    elif answer.decision == "edit":
        assert answer.arguments is not None
        queue.edit(request_id, by=by, arguments=answer.arguments)
    else:
        queue.deny(request_id, by=by, reason=answer.reason)


def _preview(call: ToolCall) -> str:
    """What a person approving a framework tool's call reads: every argument it was given."""
    return preview_of(call.arguments)
