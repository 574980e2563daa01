"""Guard audits a call refused before its session, like every other decision: no user, or a
user other than the active session's."""

import asyncio

import pytest
from toolpass import AuditEvent, Session, Toolkit, ToolRefused
from toolpass.adapting import Guard

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
