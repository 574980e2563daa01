"""One call, one audit event, also when an adapter's hook runs a ``secured_tool``: the
adapter's pipeline and the tool's own write one event together, with the final outcome,
whichever of them refuses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from toolpass import ApprovalQueue, AuditEvent, Decision, Session, Toolkit, ToolRefused
from toolpass.adapting import Guard, Rule

USER = "dana@example.com"
RULE = Rule("jira", "DELETE_ISSUES", "issue:{key}")


class Engine:
    """A permission engine answering one decision for every question."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    def check(
        self, user: str, connection: str, action: str, resource: str, fresh: bool = False
    ) -> Decision:
        return self.decision


def allow(call: Any) -> Decision:
    return Decision.allow()


def deny(call: Any) -> Decision:
    return Decision.deny("dana may not delete PAY-1")


#: Which layer decides the call, and the outcome and code its one event carries.
CASES: dict[str, tuple[Decision, dict[str, Any], str, str | None]] = {
    "both allow": (Decision.allow(), {"authorize": allow}, "ok", None),
    "the adapter's rule refuses": (
        Decision.deny("no"),
        {"authorize": allow},
        "refused",
        "not_authorized",
    ),
    "the tool's own check refuses": (
        Decision.allow(),
        {"authorize": deny},
        "refused",
        "not_authorized",
    ),
    "the tool's refusal becomes its result": (
        Decision.allow(),
        {"authorize": deny, "on_refuse": str},
        "refused",
        "not_authorized",
    ),
    "the tool's approval refuses": (
        Decision.allow(),
        {"approve": True},
        "refused",
        "approval_pending",
    ),
    "the tool's arguments are out of scope": (
        Decision.allow(),
        {"scope": {"key": "PAY-*"}, "key": "OPS-1"},
        "refused",
        "out_of_scope",
    ),
}


def _pair(
    case: str, events: list[AuditEvent], is_async: bool
) -> tuple[Guard, Callable[..., Any], str]:
    decision, options, _, _ = CASES[case]
    options = dict(options)
    key = options.pop("key", "PAY-1")
    kit = Toolkit(audit=[events.append], approver=ApprovalQueue())
    guard = Guard(Engine(decision), {"delete_issue": RULE}, toolkit=kit)
    if is_async:

        async def delete_issue(key: str) -> str:
            return f"deleted {key}"

    else:

        def delete_issue(key: str) -> str:  # type: ignore[misc]
            return f"deleted {key}"

    return guard, kit.secured_tool(effect="destructive", **options)(delete_issue), key


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_adapters_call_of_a_secured_tool_writes_one_event(case: str) -> None:
    events: list[AuditEvent] = []
    guard, tool, key = _pair(case, events, is_async=False)
    with contextlib.suppress(ToolRefused):
        guard.run(USER, "delete_issue", {"key": key}, lambda: tool(key=key))
    _, _, outcome, code = CASES[case]
    assert [(e.tool, e.user, e.outcome, e.code) for e in events] == [
        ("delete_issue", USER, outcome, code)
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_adapters_call_of_a_secured_tool_writes_one_event_async(case: str) -> None:
    events: list[AuditEvent] = []
    guard, tool, key = _pair(case, events, is_async=True)

    async def go() -> None:
        with contextlib.suppress(ToolRefused):
            await guard.arun(USER, "delete_issue", {"key": key}, lambda: tool(key=key))

    asyncio.run(go())
    _, _, outcome, code = CASES[case]
    assert [(e.tool, e.user, e.outcome, e.code) for e in events] == [
        ("delete_issue", USER, outcome, code)
    ]


def test_the_one_event_keeps_what_each_layer_found() -> None:
    """The framework names the tool its own way (Claude Code: ``mcp__kit__...``); the event
    is the secured tool's, under the name the application declared."""
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])
    engine = Engine(Decision.allow("dana is a project admin"))
    guard = Guard(engine, {"mcp__kit__delete_issue": RULE}, toolkit=kit)

    @kit.secured_tool(effect="destructive")
    def delete_issue(key: str) -> str:
        return f"deleted {key}"

    ran = guard.run(
        USER, "mcp__kit__delete_issue", {"key": "PAY-1"}, lambda: delete_issue(key="PAY-1")
    )
    assert ran == "deleted PAY-1"
    [event] = events
    assert event.tool == "delete_issue"
    assert event.effect == "destructive"  # the tool's declaration
    assert event.authorization is not None  # the adapter's rule
    assert "project admin" in event.authorization[1]
    assert event.arguments == {"key": "PAY-1"}


def test_a_body_error_is_one_error_event() -> None:
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])
    guard = Guard(Engine(Decision.allow()), {"delete_issue": RULE}, toolkit=kit)

    @kit.secured_tool(effect="destructive")
    def delete_issue(key: str) -> str:
        raise ConnectionError("jira is down")

    with pytest.raises(ConnectionError, match="jira is down"):
        guard.run(USER, "delete_issue", {"key": "PAY-1"}, lambda: delete_issue(key="PAY-1"))
    assert [(e.outcome, e.code) for e in events] == [("error", None)]


def test_each_layer_writes_to_its_own_sinks_once() -> None:
    """The adapter's toolkit and the tool's differ: the one event reaches both."""
    outer: list[AuditEvent] = []
    inner: list[AuditEvent] = []
    guard = Guard(
        Engine(Decision.allow()), {"delete_issue": RULE}, toolkit=Toolkit(audit=[outer.append])
    )

    @Toolkit(audit=[inner.append]).secured_tool(effect="destructive", authorize=deny)
    def delete_issue(key: str) -> str:
        return f"deleted {key}"

    with pytest.raises(ToolRefused):
        guard.run(USER, "delete_issue", {"key": "PAY-1"}, lambda: delete_issue(key="PAY-1"))
    assert outer == inner
    assert [(e.outcome, e.code) for e in outer] == [("refused", "not_authorized")]


def test_a_secured_tool_calling_another_is_two_calls() -> None:
    """Outside an adapter's call, a tool whose body calls another tool makes two calls."""
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])

    @kit.secured_tool(effect="read")
    def inner() -> str:
        return "inner"

    @kit.secured_tool(effect="read")
    def outer() -> str:
        return inner()

    with Session(USER).active():
        assert outer() == "inner"
    assert [e.tool for e in events] == ["inner", "outer"]


def test_a_framework_body_calling_two_secured_tools_writes_the_second_apart() -> None:
    """An adapter's call is one secured tool's call; a second tool its body calls is a call
    of its own."""
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])
    guard = Guard(Engine(Decision.allow()), {"delete_issue": RULE}, toolkit=kit)

    @kit.secured_tool(effect="read")
    def read_issue(key: str) -> str:
        return key

    @kit.secured_tool(effect="destructive")
    def delete_issue(key: str) -> str:
        return f"deleted {read_issue(key=key)}"

    guard.run(USER, "delete_issue", {"key": "PAY-1"}, lambda: delete_issue(key="PAY-1"))
    assert [(e.tool, e.outcome) for e in events] == [("read_issue", "ok"), ("delete_issue", "ok")]
