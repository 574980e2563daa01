"""One approval request (what a person decides), and the refusals of a call that waits on one
or whose request was approved with other arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolpass.outcome.errors import ApprovalPending, ToolRefused
from toolpass.toolkit.approval_preview import _shown, printable, shown_text


class ApprovalRequest:
    """One call waiting for (or holding) a person's decision.

    ``arguments`` holds the call's own values in the process that made the request, and
    each value as Python writes it (``repr``) in the others; ``shown_arguments()`` and
    ``to_dict()`` are the same in every process.
    """

    __slots__ = (
        "_shown",
        "_written",
        "approvers",
        "arguments",
        "connection",
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
        "standing",
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
        connection: str | None = None,
    ) -> None:
        import secrets

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
        #: pending, approved, denied, claimed (a call is about to run it), spent, expired
        self.status = "pending"
        self.decided_by: str | None = None
        self.decided_at: float | None = None
        self.reason = ""
        self.connection = connection
        #: Who may decide it (empty: anyone but its user), set by the queue's routing.
        self.approvers: tuple[str, ...] = ()
        #: The standing approval that approved it, if one did.
        self.standing: str | None = None
        #: As another process read them: each argument as written, and as shown.
        self._written: dict[str, str] | None = None
        self._shown: dict[str, str] | None = None

    def describe(self) -> str:
        """Who asks for what and why, with a preview, for the person deciding."""
        effect = f" ({printable(self.effect)})" if self.effect else ""
        why = printable("; ".join(self.reasons))
        return (
            f"{printable(self.user)} wants to run {printable(self.tool)}{effect}.\n"
            f"Why approval is needed: {why}.\n"
            f"Preview:\n{self.preview}\n"
            f"Request id: {self.id}"
        )

    def shown_arguments(self) -> dict[str, str]:
        """Each argument as the preview shows it (a secret by its digest, invisible
        characters escaped, a long value cut with its length and digest), for a prompt."""
        if self._shown is not None:
            return dict(self._shown)
        return {str(name): _shown(name, value) for name, value in self.arguments.items()}

    def written_arguments(self) -> dict[str, str]:
        """Each argument as Python writes it (``repr``), in whichever process reads it."""
        if self._written is not None:
            return dict(self._written)
        return {str(name): repr(value) for name, value in self.arguments.items()}

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON values (arguments as Python writes them)."""
        return {
            "id": self.id,
            "user": self.user,
            "session_id": self.session_id,
            "tool": self.tool,
            "effect": self.effect,
            "arguments": self.written_arguments(),
            "shown": self.shown_arguments(),
            "reasons": list(self.reasons),
            "preview": self.preview,
            "created": self.created,
            "status": self.status,
            "decided_by": self.decided_by,
            "decided_at": self.decided_at,
            "reason": self.reason,
            "connection": self.connection,
            "approvers": list(self.approvers),
            "standing": self.standing,
        }

    def _load(self, record: Mapping[str, Any]) -> ApprovalRequest:
        self.status, self.decided_by = record["status"], record["decided_by"]
        self.decided_at, self.reason = record["decided_at"], record["reason"]
        self.approvers, self.standing = tuple(record.get("approvers", ())), record.get("standing")
        return self

    @classmethod
    def _from(cls, record: Mapping[str, Any]) -> ApprovalRequest:
        req = cls.__new__(cls)
        req.id, req.key, req.user = record["id"], (record["digest"],), record["user"]
        req.session_id, req.tool, req.effect = (
            record["session_id"],
            record["tool"],
            record["effect"],
        )
        req.arguments, req.reasons = dict(record["arguments"]), tuple(record["reasons"])
        req._written = {str(name): str(text) for name, text in record["arguments"].items()}
        shown = record.get("shown")  # absent in a record written before it was kept
        req._shown = (
            {str(name): str(text) for name, text in shown.items()}
            if isinstance(shown, dict)
            else {name: shown_text(name, text) for name, text in req._written.items()}
        )
        req.preview, req.created = record["preview"], record["created"]
        req.connection = record.get("connection")
        return req._load(record)

    def __repr__(self) -> str:
        return f"ApprovalRequest({self.id!r}, {self.tool!r}, user={self.user!r}, {self.status})"


def edited(req: ApprovalRequest) -> ToolRefused:
    """The refusal of a call whose request a person approved with other arguments."""
    return ToolRefused(
        "approval_edited",
        f"{printable(req.decided_by or 'A person')} approved this call only with changed "
        f"arguments (request {req.id}), so it was not made as given. Tell the user.",
        detail=f"edited by {req.decided_by}",
    )


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
