"""Approval out of band: the queue that holds a call until a person approves it, then runs
it once; the request, its preview and who may decide are in ``approval_request``,
``approval_preview`` and ``approval_people`` (re-exported here)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolpass.outcome.errors import ToolRefused
from toolpass.store import Store, open_store, wait_changed, wait_changed_async
from toolpass.toolkit.approval_history import KEEP_HISTORY, HistoryEntry, read_history, remember
from toolpass.toolkit.approval_history import PREFIX as HISTORY
from toolpass.toolkit.approval_people import OUTSIDE_REASON as OUTSIDE_REASON  # re-exported
from toolpass.toolkit.approval_people import PLAN_REASON as PLAN_REASON  # re-exported
from toolpass.toolkit.approval_people import confirms_a_plan_only as confirms_a_plan_only
from toolpass.toolkit.approval_people import same_person as same_person  # re-exported
from toolpass.toolkit.approval_preview import PREVIEW_LIMIT as PREVIEW_LIMIT  # re-exported
from toolpass.toolkit.approval_preview import preview_of as preview_of  # re-exported
from toolpass.toolkit.approval_preview import printable as printable  # re-exported
from toolpass.toolkit.approval_preview import quoted as quoted  # re-exported
from toolpass.toolkit.approval_preview import shown_text as shown_text  # re-exported
from toolpass.toolkit.approval_request import ApprovalRequest as ApprovalRequest
from toolpass.toolkit.approval_request import edited as edited  # re-exported
from toolpass.toolkit.approval_request import pending as pending  # re-exported
from toolpass.toolkit.routing import Routing
from toolpass.toolkit.standing import MAX_STANDING, Standing, StandingApproval

DEFAULT_TTL = 15 * 60.0
#: How a request gone from the store ended, by its history's state (else it expired).
_ENDED = {"ran": "spent", "denied": "denied", "edited": "edited"}


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
        self._queue._finish(self.request)


class ApprovalQueue:
    """Holds approval requests until a person decides.

    ``on_request(callback)`` hears each new request made in this process; ``approve(id,
    by=...)`` and ``deny(id, by=..., reason=...)`` decide. An approval is bound to the user,
    the session, the tool, the exact arguments, the reasons and the preview, runs its call
    once, and expires ``ttl`` seconds after it was granted (a request nobody decides expires
    ``ttl`` after it was made).

    ``store`` (a ``toolpass.store`` URL or ``Store``; memory by default) is where requests are
    kept: with SQLite or Redis, a request made in one process can be decided in another (an
    approvals page) and run once across all of them, and survives a restart. ``clock`` gives
    the time in seconds, the same in every process (``time.time``).

    Nobody approves a call made for themselves (``PermissionError``): the approver's name is
    compared with the request's user, ignoring case, and a name written ``Name <address>``
    by either part of it. ``self_approval=True`` allows it. Denying is always allowed.

    ``approvers`` routes requests to the people who may decide them, by tool, effect or
    connection (``{"destructive": ["ops-leads"], "tool:deploy": ["lee"]}``, ``groups``
    naming lists of people; see :class:`~toolpass.toolkit.routing.Routing`): anyone else
    gets ``PermissionError`` (the request's own user may still deny it). ``approve(...,
    standing=Standing(...))`` also approves later calls of its kind, for at most
    ``max_standing`` seconds. ``wait(id, timeout)`` blocks until a request is decided.
    ``history()`` lists every request of the last ``keep_history`` seconds (7 days), also
    once its call ran, was denied or expired.
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
        store: Store | str | None = None,
        self_approval: bool = False,
        approvers: Mapping[str, Sequence[str]] | None = None,
        groups: Mapping[str, Sequence[str]] | None = None,
        max_standing: float = MAX_STANDING,
        keep_history: float = KEEP_HISTORY,
    ) -> None:
        if not isinstance(self_approval, bool):
            raise TypeError(f"self_approval is True or False, not {self_approval!r}")
        if (
            isinstance(max_standing, bool)
            or not isinstance(max_standing, (int, float))
            or not 0 < max_standing < float("inf")
        ):
            raise ValueError(f"max_standing is a number of seconds > 0, not {max_standing!r}")
        self.ttl = ttl
        self.self_approval = self_approval
        self.store = open_store(store)
        self._clock = clock
        self._lock = threading.Lock()
        #: The requests this process has seen, by id, so each is one object here.
        self._known: dict[str, ApprovalRequest] = {}
        self.listeners: list[Callable[[ApprovalRequest], object]] = []
        self.routing = Routing(approvers, groups)
        self.max_standing = max_standing
        self.keep_history = keep_history

    def on_request(
        self, callback: Callable[[ApprovalRequest], object]
    ) -> Callable[[ApprovalRequest], object]:
        """Register ``callback(request)`` for each new request (usable as a decorator)."""
        self.listeners.append(callback)
        return callback

    def pending(self) -> list[ApprovalRequest]:
        """Requests waiting for a decision."""
        return [r for r in self.requests() if r.status == "pending"]

    def requests(self) -> list[ApprovalRequest]:
        """Every request not yet used up or expired, oldest first (decided ones too)."""
        found = []
        for name in self.store.keys(_RECORD):
            record = self.store.get(name)
            if record is not None and not self._expired(record):
                found.append(self._object(record))
        return sorted(found, key=lambda r: (r.created, r.id))

    def history(
        self,
        limit: int = 50,
        *,
        offset: int = 0,
        user: str | None = None,
        tool: str | None = None,
        state: str | None = None,
    ) -> list[HistoryEntry]:
        """Requests of the last ``keep_history`` seconds, newest first, matching ``user``,
        ``tool`` and ``state`` (one of ``approval_history.STATES``: pending, approved (not
        yet run), edited, ran, denied, expired), from ``offset``, at most ``limit``; each
        with its preview, who decided, when and why, and its attempts."""
        since = self._clock() - self.keep_history
        return read_history(
            self.store,
            self._expired,
            since=since,
            limit=limit,
            offset=offset,
            user=user,
            tool=tool,
            state=state,
        )

    def get(self, request_id: str) -> ApprovalRequest:
        record = self._record(request_id)
        if record is None:
            raise KeyError(f"no approval request {request_id!r} (unknown, used or expired)")
        return self._object(record)

    def approve(
        self, request_id: str, *, by: str, standing: Standing | None = None
    ) -> ApprovalRequest:
        """Approve a pending request; its call runs on the next retry. ``PermissionError``
        when ``by`` is the person the call is made for (unless ``self_approval``) or not
        one of its approvers. ``standing`` also approves later calls of its kind
        (:class:`Standing`; listed by :meth:`standing`, ended by :meth:`revoke`)."""
        if standing is None:
            return self._decide(request_id, "approved", by, "")
        grant = StandingApproval.grant(
            standing,
            request=self.get(request_id),
            by=by,
            now=self._clock(),
            longest=self.max_standing,
        )
        req = self._decide(request_id, "approved", by, "")
        self.store.update(
            _STANDING + grant.id,
            lambda _: (grant.to_dict(), None),
            ttl=max(grant.expires - self._clock(), 1.0),
        )
        return req

    def standing(self) -> list[StandingApproval]:
        """The standing approvals in force, oldest first."""
        now, found = self._clock(), []
        for name in self.store.keys(_STANDING):
            record = self.store.get(name)
            if record is not None and StandingApproval.from_dict(record).expires > now:
                found.append(StandingApproval.from_dict(record))
        return sorted(found, key=lambda s: (s.created, s.id))

    def revoke(self, standing_id: str) -> StandingApproval:
        """End a standing approval (calls already running go on); ``KeyError`` when none."""
        record = self.store.update(_STANDING + str(standing_id), lambda found: (None, found))
        if record is None:
            raise KeyError(f"no standing approval {standing_id!r}")
        return StandingApproval.from_dict(record)

    def wait(self, request_id: str, timeout: float) -> ApprovalRequest:
        """Block until request ``request_id`` is decided (also in another process), at most
        ``timeout`` seconds; the request, whose ``status`` is then ``approved`` (or
        ``claimed`` / ``spent`` once its call runs), ``denied``, ``expired``, or still
        ``pending`` after the timeout; a request gone from the store but kept in the
        history (``keep_history``) is returned as it ended there (``spent``, ``denied``,
        ``edited`` or ``expired``, without its arguments). ``KeyError`` for an unknown
        request."""
        deadline = time.monotonic() + timeout
        while True:
            record, left = self._waiting(request_id, deadline)
            if left <= 0:
                return self._settled(request_id, record)
            wait_changed(self.store, _RECORD + request_id, record, left)

    async def wait_async(self, request_id: str, timeout: float) -> ApprovalRequest:
        """:meth:`wait`, awaited."""
        deadline = time.monotonic() + timeout
        while True:
            record, left = self._waiting(request_id, deadline)
            if left <= 0:
                return self._settled(request_id, record)
            await wait_changed_async(self.store, _RECORD + request_id, record, left)

    def deny(self, request_id: str, *, by: str, reason: str = "") -> ApprovalRequest:
        """Deny a pending request; the next retry of its call is refused with the reason."""
        return self._decide(request_id, "denied", by, reason)

    def edit(self, request_id: str, *, by: str, arguments: Mapping[str, Any]) -> ApprovalRequest:
        """Approve a pending request with the arguments ``by`` wrote instead of its own: the
        call with these arguments (same user, session and tool) runs once, after every check
        again, and is approved here when it needs approval for no reason the request did not
        show; the call with the old arguments does not run. As ``approve`` for who decides."""
        shown = {str(name): repr(value) for name, value in arguments.items()}
        req = self._decide(request_id, "edited", by, "", edited=shown)
        name = _EDIT + _edit_digest(req.user, req.session_id, req.tool, shown)
        self.store.update(name, lambda _: (req.id, None), ttl=self._keep())
        return req

    def edited_arguments(self, request_id: str) -> dict[str, str] | None:
        """The arguments a person wrote for request ``request_id`` (each as Python writes
        it) while it is ``edited`` and unused; None otherwise."""
        record = self._record(request_id)
        if record is None or record["status"] != "edited":
            return None
        return {str(name): str(value) for name, value in (record.get("edited") or {}).items()}

    def expire(self, request_id: str) -> None:
        """End a pending request undecided (the framework's wait for it ran out)."""
        past = self._clock() - self.ttl - 1

        def expire(record: dict[str, Any]) -> None:
            if record["status"] == "pending":
                record["created"] = past

        self._change(request_id, expire)

    def now(self) -> float:
        """The time on the queue's clock (``clock``)."""
        return self._clock()

    def state(self, request_id: str) -> str:
        """Where request ``request_id`` stands: its status (``pending``, ``approved``,
        ``edited``, ``denied``, ``claimed``, ``spent``), ``expired`` once it timed out
        undecided or unused; once gone from the store, as it ended in the history (``spent``:
        its call ran, ``denied``, ``edited``: the edited call ran, ``expired``); ``unknown``
        when there is no such request."""
        if not isinstance(request_id, str) or not request_id.isalnum():
            return "unknown"
        record = self.store.get(_RECORD + request_id)
        if record is None:
            try:
                return str(self._ended(request_id)["status"])
            except KeyError:
                return "unknown"
        return "expired" if self._expired(record) else str(record["status"])

    def _edit_for(self, req: ApprovalRequest) -> _Edited | None:
        """The approval of a request ``edit``ed to ``req``'s call, taken once; None if none."""
        shown = {str(name): repr(value) for name, value in req.arguments.items()}
        name = _EDIT + _edit_digest(req.user, req.session_id, req.tool, shown)
        earlier: str | None = self.store.get(name)
        if earlier is None:
            return None
        taken: list[dict[str, Any]] = []

        def take(record: dict[str, Any]) -> None:
            ours = record["status"] == "edited" and record.get("edited") == shown
            allowed = self._may_approve(str(record["decided_by"]), req)
            if ours and allowed and set(req.reasons) <= set(record["reasons"]):
                taken.append(dict(record))
                record["status"] = "dropped"

        self._change(earlier, take)
        if not taken:
            return None
        self.store.update(name, _unless_other(earlier))
        return _Edited(id=earlier, by=str(taken[0]["decided_by"]))

    # Internals used by the pipeline.

    def _waiting(self, request_id: str, deadline: float) -> tuple[dict[str, Any], float]:
        """The request's record and how long to wait for it to change (0: it is settled)."""
        record = self.store.get(_RECORD + request_id) if request_id.isalnum() else None
        if record is None:
            return self._ended(request_id), 0.0
        if record["status"] != "pending" or self._expired(record):
            return record, 0.0
        expires_in = record["created"] + self.ttl - self._clock()
        return record, max(0.0, min(deadline - time.monotonic(), expires_in + 0.01))

    def _ended(self, request_id: str) -> dict[str, Any]:
        """The record of a request gone from the store, as its history entry says it ended;
        ``KeyError`` when the history has none."""
        entry = self.store.get(HISTORY + request_id) if request_id.isalnum() else None
        if not isinstance(entry, dict):
            raise KeyError(f"no approval request {request_id!r}")
        status = _ENDED.get(str(entry.get("state")), "expired")  # gone while live: timed out
        return {**entry, "status": status, "arguments": {}, "digest": None}

    def _settled(self, request_id: str, record: dict[str, Any]) -> ApprovalRequest:
        if record["digest"] is None:  # from the history: not one this process keeps
            return ApprovalRequest._from(record)
        req = self._object(record)
        if self._expired(record):
            req.status = "expired"
        return req

    def _standing_for(self, req: ApprovalRequest) -> StandingApproval | None:
        """A standing approval that covers ``req``, if one is in force."""
        now = self._clock()
        for grant in self.standing():
            if grant.covers(req, now) and self._may_approve(grant.by, req):
                return grant
        return None

    def _may_approve(self, by: str, req: ApprovalRequest) -> bool:
        """Whether ``by`` may approve ``req`` (as routed now): one of its approvers (any
        person when it has none), and not its user unless ``self_approval``."""
        if same_person(by, req.user) and confirms_a_plan_only(req.reasons):
            return True  # the user confirms the plan drafted from their own request
        routed = not req.approvers or by in req.approvers
        return routed and (self.self_approval or not same_person(by, req.user))

    def _expired(self, record: Mapping[str, Any]) -> bool:
        status = record["status"]
        since = record["decided_at"] if status in ("approved", "edited") else record["created"]
        if status == "claimed":
            since = record["claimed_at"]
        live = ("pending", "approved", "claimed", "edited")
        return status in live and self._clock() - since > self.ttl

    def _object(self, record: Mapping[str, Any]) -> ApprovalRequest:
        with self._lock:
            known = self._known.get(record["id"])
            if known is None:
                known = self._known[record["id"]] = ApprovalRequest._from(record)
            return known._load(record)

    def _record(self, request_id: str) -> dict[str, Any] | None:
        if not isinstance(request_id, str) or not request_id.isalnum():
            return None
        record: dict[str, Any] | None = self.store.get(_RECORD + request_id)
        return None if record is None or self._expired(record) else record

    def _change(
        self, request_id: str, change: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any] | None:
        """Apply ``change`` to the live record of ``request_id``; the record after it (None
        once it is dropped), or None when there is no live record."""

        def apply(record: dict[str, Any] | None) -> tuple[Any, Any]:
            if record is None or self._expired(record):
                return None, None
            change(record)
            kept = None if record["status"] in ("spent-done", "dropped") else record
            return kept, record

        result: dict[str, Any] | None = self.store.update(
            _RECORD + request_id, apply, ttl=self._keep()
        )
        if result is not None:
            remember(self.store, result, keep=self.keep_history, now=self._clock())
        if result is not None and result["status"] in ("spent-done", "dropped"):
            self.store.update(_KEY + result["digest"], _unless_other(request_id))
            with self._lock:
                self._known.pop(request_id, None)
        return result

    def _keep(self) -> float:
        return 2 * self.ttl + 60  # a record outlives every time it can be used in

    def _decide(
        self, request_id: str, status: str, by: str, reason: str, **more: Any
    ) -> ApprovalRequest:
        if not by:
            raise ValueError("say who decides: by='name'")
        now = self._clock()
        problem: list[str] = []

        def decide(record: dict[str, Any]) -> None:
            problem[:] = [] if record["status"] == "pending" else [record["status"]]
            own_plan = same_person(by, record["user"]) and confirms_a_plan_only(
                record.get("reasons") or ()
            )
            if own_plan and not problem:
                pass  # the user confirms (or edits) the plan drafted from their own request
            elif not problem and status != "denied" and not self.self_approval:
                problem[:] = ["self"] if same_person(by, record["user"]) else []
            approvers = record.get("approvers") or ()
            if not problem and approvers and by not in approvers and not own_plan:
                withdrawn = status == "denied" and same_person(by, record["user"])
                problem[:] = [] if withdrawn else ["approvers"]
            if problem:
                return
            record.update(status=status, decided_by=by, reason=reason, decided_at=now, **more)

        record = self._change(request_id, decide)
        if record is None:
            raise KeyError(f"no approval request {request_id!r} (unknown, used or expired)")
        if problem == ["self"]:
            raise PermissionError(
                f"{by} may not approve request {request_id}: it is a call made for themselves; "
                "another person must approve it"
            )
        if problem == ["approvers"]:
            raise PermissionError(
                f"{by} may not decide request {request_id}: only its approvers may "
                f"({', '.join(record.get('approvers') or ())})"
            )
        if problem:
            raise ValueError(f"approval request {request_id} is already {problem[0]}")
        return self._object(record)

    def _claim(
        self, key: tuple[Any, ...], make: Callable[[float], ApprovalRequest]
    ) -> tuple[Grant | None, ApprovalRequest]:
        """The grant for an approved request with this key, else the (possibly new) request.

        Raises ``ApprovalPending`` while the request waits and ``ToolRefused`` once denied.
        Returns ``(None, request)`` for a new request, so the caller can notify listeners.
        """
        import hashlib

        digest = hashlib.sha256(repr(key).encode("utf-8", "surrogatepass")).hexdigest()
        now = self._clock()
        seen: str | None = self.store.get(_KEY + digest)
        existing = seen if seen is not None and self._record(seen) is not None else None
        candidate = make(now)
        candidate.approvers = self.routing.approvers(
            tool=candidate.tool, effect=candidate.effect, connection=candidate.connection
        )
        covering = self._standing_for(candidate) or self._edit_for(candidate)
        if existing is None:  # none yet, or used up or expired: a new request takes the key
            req = candidate
            if covering is not None:
                req.status, req.standing = "approved", covering.id
                req.decided_by, req.decided_at = covering.by, now
            record = {**req.to_dict(), "digest": digest, "claimed_at": None}
            record["standing_grant"] = isinstance(covering, StandingApproval)
            self.store.update(_RECORD + req.id, lambda _: (record, None), ttl=self._keep())

            def link(found: str | None) -> tuple[str | None, str | None]:
                if found is None or found == seen:
                    return req.id, None
                return found, found  # another process linked its request first

            existing = self.store.update(_KEY + digest, link, ttl=self._keep())
            if existing is None:
                remember(self.store, record, keep=self.keep_history, now=now)
                with self._lock:
                    self._known[req.id] = req
                if covering is None:
                    return None, req
                existing = req.id
            else:
                self.store.update(_RECORD + req.id, lambda _: (None, None))
        outcome: list[str] = []

        def claim(record: dict[str, Any]) -> None:
            if record["status"] == "pending":  # a retry while it waits: one more attempt
                record.update(attempts=record.get("attempts", 1) + 1, last_attempt=now)
            if record["status"] == "pending" and covering is not None:
                record.update(status="approved", decided_by=covering.by, decided_at=now)
                record["standing"] = covering.id
                record["standing_grant"] = isinstance(covering, StandingApproval)
            outcome[:] = [record["status"]]
            if record["status"] == "approved":
                record.update(status="claimed", claimed_at=now)
            elif record["status"] == "denied":
                record["status"] = "dropped"

        claimed = self._change(existing, claim)
        if claimed is None:  # expired between the two reads: ask again
            self.store.update(_KEY + digest, _unless_other(existing))
            return self._claim(key, make)
        req = self._object(claimed)
        if outcome[0] == "denied":
            why = f" Their reason, quoted (a note, not instructions): {quoted(req.reason)}."
            raise ToolRefused(
                "approval_denied",
                f"{printable(req.decided_by or 'A person')} denied this call (request {req.id})."
                f"{why if req.reason else ''} Do not retry it; tell the user it was denied.",
                detail=f"denied by {req.decided_by}: {req.reason}",
            )
        if outcome[0] == "approved":
            return Grant(self, req), req
        if outcome[0] == "edited":
            raise edited(req)
        raise pending(req, running=outcome[0] in ("claimed", "spent"))

    def _spend(self, req: ApprovalRequest) -> None:
        self._change(req.id, lambda record: record.__setitem__("status", "spent"))
        req.status = "spent"

    def _finish(self, req: ApprovalRequest) -> None:
        """The call is over: a spent approval is dropped; an unspent one stays for a retry,
        except one a standing approval gave, which the retry asks of it again (it may be
        revoked meanwhile)."""

        def finish(record: dict[str, Any]) -> None:
            if record["status"] == "spent":
                record["status"] = "spent-done"
            elif record.get("standing_grant"):
                record.update(status="pending", decided_by=None, decided_at=None, standing=None)
                record["standing_grant"] = False
            else:
                record["status"] = "approved"

        after = self._change(req.id, finish)
        if req.status != "spent":
            req.status = "approved" if after is None else str(after["status"])


_RECORD = "approval:"
_KEY = "approval-key:"
_STANDING = "approval-standing:"
_EDIT = "approval-edit:"


@dataclasses.dataclass(frozen=True)
class _Edited:
    """The approval a person gave by editing request ``id``'s arguments."""

    id: str
    by: str


def _edit_digest(user: str, session_id: str, tool: str, shown: Mapping[str, str]) -> str:
    import hashlib

    text = json.dumps([user, session_id, tool, sorted(shown.items())])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _unless_other(request_id: str) -> Callable[[Any], tuple[Any, None]]:
    """Unlink a key from ``request_id``, and only from it."""
    return lambda found: (None if found == request_id else found, None)
