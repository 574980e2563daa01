"""Guard audits a call refused before its session, like every other decision: no user, or a
user other than the active session's."""

import asyncio
import threading
import time

import pytest
from toolpass import ApprovalQueue, AuditEvent, Session, Toolkit, ToolRefused
from toolpass.adapting import Guard, Traits

USER, OTHER = "dana@example.com", "erin@example.com"


def guard(events: list[AuditEvent]) -> Guard:
    return Guard(engine=None, toolkit=Toolkit(audit=[events.append]))


@pytest.mark.parametrize("user", [None, "", "  "])
def test_no_user_is_refused_and_audited(user: str | None) -> None:
    events: list[AuditEvent] = []
    with pytest.raises(ToolRefused) as refused:
        guard(events).run(user, "delete_issue", {"key": "PAY-1"}, lambda: "ran")
    assert refused.value.code == "no_session"
    assert "looked in the run context's 'user_id'" in refused.value.message  # where it looked
    [event] = events
    assert (event.tool, event.user, event.outcome, event.code) == (
        "delete_issue",
        None,
        "refused",
        "no_session",
    )
    assert event.arguments == {"key": "PAY-1"}


def test_another_users_session_is_refused_and_audited_async() -> None:
    events: list[AuditEvent] = []

    async def body() -> str:
        return "ran"

    async def go() -> None:
        with Session(OTHER).active():
            await guard(events).arun(USER, "whoami", {}, body)

    with pytest.raises(ToolRefused, match="does not match"):
        asyncio.run(go())
    [event] = events
    assert (event.user, event.code) == (USER, "check_error")
    assert OTHER in (event.detail or "")


def test_a_call_the_pipeline_saw_is_audited_once() -> None:
    events: list[AuditEvent] = []
    g = guard(events)
    assert g.run(USER, "whoami", {}, lambda: "ran") == "ran"
    assert g.check(None, "whoami", {}) is not None
    assert [(e.user, e.outcome, e.code) for e in events] == [
        (USER, "ok", None),
        (None, "refused", "no_session"),
    ]


# Early refusals: Guard.who and Guard.refusing write the one event, never the adapter.


def test_a_failing_user_source_is_refused_and_audited_once() -> None:
    events: list[AuditEvent] = []

    def down(_: object) -> str:
        raise LookupError("the user store is down")

    g = Guard(engine=None, toolkit=Toolkit(audit=[events.append]), user=down)
    with pytest.raises(ToolRefused) as refused:
        g.who("delete_issue", {"key": "PAY-1"}, None, object(), run=object())
    assert refused.value.code == "check_error"
    assert "down" not in refused.value.message  # the detail is for the audit
    [event] = events
    assert (event.tool, event.user, event.code) == ("delete_issue", None, "check_error")
    assert "LookupError: the user store is down" in (event.detail or "")


def test_a_failure_made_a_refusal_is_audited_and_another_exception_passes_on() -> None:
    events: list[AuditEvent] = []
    g = guard(events)

    def broken(exc: Exception) -> ToolRefused | None:
        if isinstance(exc, KeyError):
            return None  # not ours: it passes on
        return ToolRefused("check_error", "It could not be checked.", detail=repr(exc))

    with pytest.raises(ToolRefused), g.refusing("t", {}, USER, failed=broken):
        raise RuntimeError("the host's prompt failed")
    with pytest.raises(KeyError), g.refusing("t", {}, USER, failed=broken):
        raise KeyError("x")
    assert [(e.user, e.code, e.detail) for e in events] == [
        (USER, "check_error", 'RuntimeError("the host\'s prompt failed")')
    ]


def test_a_refusal_the_guard_audited_is_never_audited_again() -> None:
    """A refusal passing through ``refusing`` after the pipeline (or ``refusing``) wrote its
    event: still one event, however many layers it passes through."""
    events: list[AuditEvent] = []
    g = guard(events)
    with pytest.raises(ToolRefused), g.refusing("t", {}), g.refusing("t", {}):
        g.run(None, "t", {}, lambda: "ran")  # no user: refused and audited by run
    with pytest.raises(ToolRefused), g.refusing("t", {}), g.refusing("t", {}):
        raise ToolRefused("check_error", "Not checked.")
    assert [e.code for e in events] == ["no_session", "check_error"]


# approval_wait: a framework with no pause blocks within the call's one check.


def _approving(queue: ApprovalQueue, by: str) -> None:
    """A person who approves the first request that waits (from another thread)."""

    def watch() -> None:
        for _ in range(1500):
            waiting = queue.pending()
            if waiting:
                queue.approve(waiting[0].id, by=by)
                return
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_waiting_for_a_person_is_one_event_with_who_approved(mode: str) -> None:
    events: list[AuditEvent] = []
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[events.append])
    g = Guard(None, {"wire": Traits(approve=True)}, toolkit=kit, approval_wait=20)
    _approving(queue, "lee")

    async def body() -> str:
        return "wired"

    if mode == "sync":
        assert g.run(USER, "wire", {"amount": 5}, lambda: "wired") == "wired"
    else:
        assert asyncio.run(g.arun(USER, "wire", {"amount": 5}, body)) == "wired"
    [event] = events
    assert (event.outcome, event.approved_by) == ("ok", "lee")
    assert event.approval_id == queue.history()[0].id


def test_nobody_answering_in_time_is_one_pending_event() -> None:
    events: list[AuditEvent] = []
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[events.append])
    g = Guard(None, {"wire": Traits(approve=True)}, toolkit=kit, approval_wait=0.05)
    with pytest.raises(ToolRefused) as refused:
        g.run(USER, "wire", {"amount": 5}, lambda: "wired")
    assert refused.value.code == "approval_pending"
    assert [(e.outcome, e.code) for e in events] == [("refused", "approval_pending")]
