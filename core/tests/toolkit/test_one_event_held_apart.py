"""A hook's decision held for its body (``Guard.check(..., body_follows=True)``) is taken
only by that body, run in ``Guard.session`` for the same user: never by another call made in
the same thread or task, nor by another user's body, so no call's event vanishes into
another's."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from toolpass import AuditEvent, Decision, Session, Toolkit
from toolpass.adapting import Guard, Rule

ALICE, BOB = "alice@example.com", "bob@example.com"


class Engine:
    """A permission engine that allows everything."""

    def check(
        self, user: str, connection: str, action: str, resource: str, fresh: bool = False
    ) -> Decision:
        return Decision.allow()


def _setup() -> tuple[Guard, Any, list[AuditEvent]]:
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])
    guard = Guard(
        Engine(), {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}, toolkit=kit
    )

    @kit.secured_tool(effect="read")
    def lookup(key: str) -> str:
        return key

    return guard, lookup, events


def _seen(events: list[AuditEvent]) -> list[tuple[str, str | None, str]]:
    gc.collect()
    return sorted((e.tool, e.user, e.outcome) for e in events)


def test_a_held_decision_whose_body_never_ran_is_not_another_users_call() -> None:
    guard, lookup, events = _setup()
    assert guard.check(ALICE, "delete_issue", {"key": "PAY-1"}, body_follows=True) is None
    with Session(BOB).active():  # the framework dropped alice's body; bob's call runs here
        lookup(key="X")
    assert _seen(events) == [("delete_issue", ALICE, "ok"), ("lookup", BOB, "ok")]


def test_another_users_body_does_not_take_a_held_decision() -> None:
    guard, lookup, events = _setup()
    assert guard.check(ALICE, "delete_issue", {"key": "PAY-1"}, body_follows=True) is None
    with guard.session(BOB):
        lookup(key="X")
    assert _seen(events) == [("delete_issue", ALICE, "ok"), ("lookup", BOB, "ok")]


def test_a_held_decision_is_not_taken_by_a_call_in_a_task_outside_its_body() -> None:
    guard, lookup, events = _setup()

    async def run() -> None:
        refused = await guard.acheck(ALICE, "delete_issue", {"key": "PAY-1"}, body_follows=True)
        assert refused is None

        async def other() -> None:
            with Session(BOB).active():
                lookup(key="X")

        await asyncio.create_task(other())  # copies the context that holds alice's decision

    asyncio.run(run())
    assert _seen(events) == [("delete_issue", ALICE, "ok"), ("lookup", BOB, "ok")]


def test_its_own_body_still_takes_it_as_one_event() -> None:
    guard, lookup, events = _setup()
    assert guard.check(ALICE, "delete_issue", {"key": "PAY-1"}, body_follows=True) is None
    with guard.session(ALICE):
        lookup(key="PAY-1")
    assert _seen(events) == [("lookup", ALICE, "ok")]
