"""The decided history of approval requests: each request is kept (its preview, never its
raw arguments) after its call ran, was denied or expired, for ``keep`` seconds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolpass.store import Store

#: How long a request stays in the history by default: seven days.
KEEP_HISTORY = 7 * 24 * 3600.0
#: What ``history(state=...)`` accepts: waiting, approved but not yet run, approved with
#: changed arguments, run, denied, expired undecided or unused.
STATES = ("pending", "approved", "edited", "ran", "denied", "expired")
PREFIX = "approval-history:"
_KEPT = (
    "id",
    "user",
    "session_id",
    "tool",
    "effect",
    "connection",
    "preview",
    "reasons",
    "created",
    "status",
    "decided_by",
    "decided_at",
    "reason",
    "standing",
    "standing_grant",
    "claimed_at",
    "attempts",
    "last_attempt",
    "digest",
)
_STATE_OF = {
    "pending": "pending",
    "approved": "approved",
    "claimed": "approved",
    "edited": "edited",
    "spent": "ran",
    "spent-done": "ran",
    "denied": "denied",
}


@dataclass(frozen=True)
class HistoryEntry:
    """One request as the history keeps it: who asked for which call (its preview), who
    decided, when and why, and where it stands (one of ``STATES``)."""

    id: str
    user: str
    session_id: str
    tool: str
    effect: str | None
    preview: str
    reasons: tuple[str, ...]
    created: float
    state: str
    decided_by: str | None
    decided_at: float | None
    reason: str
    standing: str | None
    #: Calls that asked for it: the first, and each retry while it waited.
    attempts: int
    last_attempt: float
    ran_at: float | None
    #: Names the exact call (user, session, tool, arguments, reasons, preview), not shown.
    digest: str | None = None
    #: Whether ``standing`` is the standing approval that approved it (else the request
    #: whose edited arguments it ran with).
    standing_grant: bool = False

    @classmethod
    def of(cls, entry: Mapping[str, Any], state: str) -> HistoryEntry:
        return cls(
            id=entry["id"],
            user=entry["user"],
            session_id=entry["session_id"],
            tool=entry["tool"],
            effect=entry.get("effect"),
            preview=entry["preview"],
            reasons=tuple(entry.get("reasons") or ()),
            created=entry["created"],
            state=state,
            decided_by=entry.get("decided_by"),
            decided_at=entry.get("decided_at"),
            reason=entry.get("reason") or "",
            standing=entry.get("standing"),
            attempts=int(entry.get("attempts") or 1),
            last_attempt=entry.get("last_attempt") or entry["created"],
            ran_at=entry.get("ran_at"),
            digest=entry.get("digest"),
            standing_grant=bool(entry.get("standing_grant")),
        )


def remember(store: Store, record: Mapping[str, Any], *, keep: float, now: float) -> None:
    """Keep request ``record`` as it now stands in the history (a dropped record keeps the
    state it had: denied, or approved with changed arguments)."""

    def merge(old: dict[str, Any] | None) -> tuple[dict[str, Any], None]:
        entry = {name: record.get(name) for name in _KEPT}
        before = (old or {}).get("state")
        entry["state"] = _STATE_OF.get(record["status"]) or before or "denied"
        ran = (old or {}).get("ran_at")
        entry["ran_at"] = ran or (now if entry["state"] == "ran" else None)
        return entry, None

    store.update(PREFIX + record["id"], merge, ttl=keep)


def read_history(
    store: Store,
    expired: Callable[[Mapping[str, Any]], bool],
    *,
    since: float,
    limit: int,
    offset: int = 0,
    user: str | None = None,
    tool: str | None = None,
    state: str | None = None,
) -> list[HistoryEntry]:
    """The entries made after ``since`` that match every filter given, newest first, from
    ``offset``, at most ``limit``; ``expired(entry)`` says whether a live one timed out."""
    if state is not None and state not in STATES:
        raise ValueError(f"state is one of {', '.join(STATES)}, not {state!r}")
    found = []
    for name in store.keys(PREFIX):
        entry = store.get(name)
        if not isinstance(entry, dict) or entry.get("created", 0) < since:
            continue
        now_state = "expired" if expired(entry) else entry["state"]
        if (
            (user is None or entry["user"] == user)
            and (tool is None or entry["tool"] == tool)
            and (state is None or now_state == state)
        ):
            found.append(HistoryEntry.of(entry, now_state))
    found.sort(key=lambda e: (e.created, e.id), reverse=True)
    return found[offset : offset + limit]
