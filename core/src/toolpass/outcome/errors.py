"""Refusals: what the model reads when a call does not run, and why."""

from __future__ import annotations

from typing import Any

#: Every refusal code, with what it means. The set is closed: a ``ToolRefused`` with another
#: code is a programming error.
CODES: dict[str, str] = {
    "no_session": "no toolpass Session is active, so nobody is known to act",
    "invalid_arguments": "the arguments do not fit the tool's signature, types or validators",
    "out_of_scope": "an argument is outside the scope the tool allows",
    "limit_exceeded": "the session used up its calls for this tool or effect",
    "not_authorized": "the user was checked and may not do this",
    "authorization_error": "whether the user may do this could not be answered",
    "not_configured": "toolpass is not set up for this check",
    "untrusted_input": "the arguments repeat untrusted content seen in this session",
    "exfiltration": "sending data out after reading private and untrusted data",
    "untrusted_destination": "a destination of the call was found only in untrusted content",
    "not_granted": "the request was not granted this tool or effect",
    "approval_pending": "a person must approve this call first",
    "approval_denied": "a person denied this call",
    "approval_expired": "nobody decided on the call's approval request in time",
    "approval_edited": "a person approved this call only with other arguments",
    "credential_unavailable": "the credential the tool needs could not be had",
    "check_error": "a check failed unexpectedly, so the call was refused",
    "store_unavailable": "the shared store of sessions, limits and approvals failed",
    "unrequested_destination": "a destination of the call is not one the user named",
    "private_data": "the call sends out private data read in this session",
    "unmapped_action": "a write request matches no known action",
    "unresolved_resource": "a request does not name the resource it acts on",
    "unentitled_action": "a request is not among the tool's recorded actions",
    "unknown_host": "a request goes to a host toolpass does not know",
    "effect_mismatch": "the tool does more than its declared effect",
    "outside_task": "the call is outside the task the user asked for",
}


class ToolRefused(Exception):
    """A tool call refused before (or instead of) its body running.

    ``code`` is one of :data:`CODES`; ``message`` is written for the model: what happened and
    what to do next. ``detail`` carries what the audit event records and the model never sees.
    """

    def __init__(self, code: str, message: str, *, detail: str = "", **extra: Any) -> None:
        if code not in CODES:
            raise ValueError(f"unknown refusal code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail
        self.extra = extra

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class ApprovalPending(ToolRefused):
    """The call waits for a person's decision; retry the same call after it is approved.

    ``request`` is the waiting ``ApprovalRequest`` (``request.describe()``), ``request_id``
    its id, for ``ApprovalQueue.approve(id, by=...)``.
    """

    def __init__(
        self, message: str, *, request_id: str, detail: str = "", request: Any = None
    ) -> None:
        super().__init__("approval_pending", message, detail=detail)
        self.request_id = request_id
        self.request = request

    @property
    def approval_id(self) -> str:
        return self.request_id


class ToolError(Exception):
    """A tool body's exception, redacted (and fenced when its text is untrusted).

    ``original`` is the body's exception when it carried no secret (None when it did: it
    must not leave the call); ``original_type`` is its class either way. Neither
    ``__cause__`` nor ``__context__`` is set, so a traceback rendered for the model shows
    nothing of the original.
    """

    def __init__(
        self,
        message: str,
        original: BaseException | None,
        *,
        original_type: type[BaseException] | None = None,
    ) -> None:
        super().__init__(message)
        self.original = original
        self.original_type = original_type or (type(original) if original is not None else None)


class ActionRefused(ToolRefused):
    """A request a tool's body tried to send, refused before it left the process.

    Raised from inside the HTTP client library; the tool call's outcome is this refusal even
    if the body catches it.
    """

    def __init__(
        self, code: str, message: str, *, detail: str = "", action: str = "", resource: str = ""
    ) -> None:
        super().__init__(code, message, detail=detail)
        self.action = action
        self.resource = resource


def unanswerable(cause: str, what: str, because: str) -> tuple[str, str] | None:
    """``(code, message)`` for an unknown decision that asking again will not change, by its
    ``Decision.cause``: the user maps to no one in the system (an operator must map them), or
    the action does not take that resource (the call must name another). None otherwise."""
    if cause == "identity":
        return (
            "not_configured",
            f"toolpass cannot tell who the user is in the system that would answer whether "
            f"they may {what}{because}, so it was not done. Do not retry; tell the user an "
            "operator must map their account.",
        )
    if cause == "resource":
        return (
            "invalid_arguments",
            f"The resource named is not one that can be checked for {what}{because}, so it "
            "was not done. Name the resource the way the tool expects, or tell the user.",
        )
    return None
