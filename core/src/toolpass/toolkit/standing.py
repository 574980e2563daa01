"""Standing approvals: one decision that approves later calls of the same kind, for a while."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

#: The longest a standing approval lasts, unless the queue says otherwise (8 hours).
MAX_STANDING = 8 * 3600.0


class Asked(Protocol):
    """What a standing approval reads of an approval request."""

    @property
    def id(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def reasons(self) -> tuple[str, ...]: ...
    @property
    def arguments(self) -> dict[str, Any]: ...
    @property
    def approvers(self) -> tuple[str, ...]: ...
    @property
    def effect(self) -> str | None: ...
    @property
    def connection(self) -> str | None: ...
    def written_arguments(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class Standing:
    """How far an approval reaches: later calls of the same tool for the same user,
    ``session=True`` in this session only, for ``minutes`` (at most the queue's
    ``max_standing``, which is also how long one without ``minutes`` lasts), and with
    ``match`` only calls whose arguments named in it hold these values (compared as Python
    writes them); ``same_arguments=True`` matches every argument of the approved call (also
    when it is approved in another process). A later call is covered only when it needs
    approval for reasons this one was approved for."""

    session: bool = False
    minutes: float | None = None
    match: Mapping[str, Any] = field(default_factory=dict)
    same_arguments: bool = False

    def __post_init__(self) -> None:
        for name in ("session", "same_arguments"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} is True or False, not {getattr(self, name)!r}")
        if self.minutes is not None and not (
            isinstance(self.minutes, (int, float)) and self.minutes > 0
        ):
            raise ValueError(f"minutes is a positive number, not {self.minutes!r}")
        if not (self.session or self.minutes or self.match or self.same_arguments):
            raise ValueError(
                "say how far the approval reaches: Standing(session=True), "
                "Standing(minutes=N), Standing(match={name: value}) or "
                "Standing(same_arguments=True)"
            )


@dataclass(frozen=True)
class StandingApproval:
    """A standing approval in force: ``by`` approved ``user``'s calls of ``tool`` (in
    ``session_id`` when set, with arguments matching ``match``, for ``reasons``) until
    ``expires``; granted with request ``request_id``, whose ``approvers`` (empty: anyone but
    its user) may also revoke it."""

    id: str
    user: str
    tool: str
    session_id: str | None
    match: dict[str, str]
    reasons: tuple[str, ...]
    by: str
    request_id: str
    created: float
    expires: float
    approvers: tuple[str, ...] = ()
    #: ``same_arguments``: a later call is covered only with exactly these arguments.
    exact: bool = False
    #: The approved call's effect and connection: a tool of the same name declared
    #: otherwise (another application sharing the store) is another tool.
    effect: str | None = None
    connection: str | None = None

    @classmethod
    def grant(
        cls, standing: Standing, *, request: Asked, by: str, now: float, longest: float
    ) -> StandingApproval:
        """The standing approval ``by`` grants with ``request`` (approved now);
        ``ValueError`` past ``longest`` seconds or for an argument ``request`` lacks."""
        import secrets

        seconds = longest if standing.minutes is None else standing.minutes * 60
        if seconds > longest:
            raise ValueError(
                f"a standing approval lasts at most {longest / 60:g} minutes, "
                f"not {standing.minutes:g}"
            )
        unknown = sorted(set(map(str, standing.match)) - set(map(str, request.arguments)))
        if unknown:
            raise ValueError(f"request {request.id} has no argument {', '.join(unknown)}")
        match = {str(name): repr(value) for name, value in standing.match.items()}
        if standing.same_arguments:
            match.update(request.written_arguments())
        return cls(
            id=secrets.token_hex(6),
            user=request.user,
            tool=request.tool,
            session_id=request.session_id if standing.session else None,
            match=match,
            reasons=tuple(request.reasons),
            by=by,
            request_id=request.id,
            created=now,
            expires=now + seconds,
            approvers=tuple(request.approvers),
            exact=standing.same_arguments,
            effect=request.effect,
            connection=request.connection,
        )

    def covers(self, request: Asked, now: float) -> bool:
        """Whether this approves ``request`` (made in this process: its own arguments)."""
        arguments = {str(name): value for name, value in request.arguments.items()}
        return (
            now < self.expires
            and request.user == self.user
            and request.tool == self.tool
            and request.effect == self.effect
            and request.connection == self.connection
            and (not self.exact or set(arguments) == set(self.match))
            and self.session_id in (None, request.session_id)
            and set(request.reasons) <= set(self.reasons)
            and all(
                name in arguments and repr(arguments[name]) == shown
                for name, shown in self.match.items()
            )
        )

    def describe(self) -> str:
        """What it approves, for the page and the audit."""
        scope = f" in session {self.session_id}" if self.session_id else ""
        match = ", ".join(f"{name}={shown}" for name, shown in self.match.items())
        return (
            f"{self.by} approved {self.user}'s calls of {self.tool}{scope}"
            f"{f' with {match}' if match else ''} (standing approval {self.id})"
        )

    def to_dict(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        return {**record, "reasons": list(self.reasons), "approvers": list(self.approvers)}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> StandingApproval:
        approvers = tuple(record.get("approvers") or ())  # absent in an older record
        return cls(**{**record, "reasons": tuple(record["reasons"]), "approvers": approvers})
