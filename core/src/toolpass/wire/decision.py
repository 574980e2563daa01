"""The answer to "may this user do this?": allow, deny or unknown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

Verdict = Literal["allow", "deny", "unknown"]


class Where(TypedDict, total=False):
    """Who asked for what: the optional keyword arguments of the constructors."""

    user: str
    connection: str
    action: str
    resource: str
    cached: bool


@dataclass(frozen=True, slots=True)
class Decision:
    """One permission decision.

    ``decision`` is ``"allow"``, ``"deny"`` or ``"unknown"``; ``reason`` is a sentence a person
    understands. Only ``"allow"`` is ``allowed``: unknown is treated exactly like deny.
    ``cause`` says why an unknown is not a failed look-up: ``"identity"`` (the user maps to
    no one in the system) or ``"resource"`` (the action does not take that resource).
    """

    decision: Verdict
    reason: str = ""
    user: str = ""
    connection: str = ""
    action: str = ""
    resource: str = ""
    cached: bool = False
    cause: str = ""

    @property
    def allowed(self) -> bool:
        """True only for an explicit allow."""
        return self.decision == "allow"

    @classmethod
    def allow(cls, reason: str = "", **where: Unpack[Where]) -> Decision:
        return cls("allow", reason, **where)

    @classmethod
    def deny(cls, reason: str = "", **where: Unpack[Where]) -> Decision:
        return cls("deny", reason, **where)

    @classmethod
    def unknown(cls, reason: str = "", *, cause: str = "", **where: Unpack[Where]) -> Decision:
        return cls("unknown", reason, cause=cause, **where)

    def __bool__(self) -> bool:
        return self.allowed
