"""Approvals in the Agents SDK's own pause, through its real loop with the SDK's scripted
model: ``needs_approval`` is toolpass's check, the run's interruptions carry toolpass's
request, and ``state.approve`` / ``guardrails.answer`` resume it through the approval machine."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, Runner, RunResult, function_tool
from pytest_toolpass import Call, ScriptedEngine
from scripted import Ctx, agent, read
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit
from toolpass.adapting import Answer, Traits
from toolpass.openai_agents import Rule, ToolpassGuardrails

DANA = "dana@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
#: Sends out private, untrusted data: every call asks a person.
ASKS = Traits(
    effect="destructive", sends_out=True, reads_private=True, untrusted_output=True, rule=DELETE
)
ENGINE = {
    (DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow(),
    (DANA, "DELETE_ISSUES", "issue:PAY-9"): Decision.deny("not dana's"),
}


class Setup:
    def __init__(self, rules: Any = None, session: Any = lambda _: "ticket-1") -> None:
        self.queue = ApprovalQueue()
        self.events: list[AuditEvent] = []
        self.ran: list[str] = []
        kit = Toolkit(approver=self.queue, audit=[self.events.append])
        self.guardrails = ToolpassGuardrails(
            ScriptedEngine(ENGINE), rules or {"delete_issue": ASKS}, toolkit=kit, session=session
        )

    def agent(self, key: str) -> Agent[Any]:
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.ran.append(key)
            return f"deleted {key}"

        built = agent([Call("delete_issue", {"key": key})], [function_tool(delete_issue)])
        return self.guardrails.apply(built)


def _run(agent: Agent[Any], input: Any) -> RunResult:
    return asyncio.run(Runner.run(agent, input, context=Ctx(DANA)))


def test_a_call_waiting_for_a_person_interrupts_the_run_with_its_request() -> None:
    setup = Setup()
    result = _run(setup.agent("PAY-1"), "go")
    [item] = result.interruptions
    [request] = setup.queue.pending()
    payload = setup.guardrails.pending(item)
    assert payload is not None
    assert payload["request_id"] == request.id
    assert payload["arguments"] == {"key": "'PAY-1'"}
    assert setup.ran == []
    assert [e.code for e in setup.events] == ["approval_pending"]  # checked once


def test_a_call_that_would_be_refused_is_never_sent_to_a_person() -> None:
    setup = Setup()
    a = setup.agent("PAY-9")
    result = _run(a, "go")
    assert result.interruptions == []
    assert "not_authorized" in read(a)[0]
    assert setup.queue.requests() == []
    assert [e.code for e in setup.events] == ["not_authorized"]  # checked once


def test_state_approve_alone_runs_the_call_once_through_the_queue() -> None:
    setup = Setup()
    a = setup.agent("PAY-1")
    paused = _run(a, "go")
    state = paused.to_state()
    [item] = state.get_interruptions()
    state.approve(item)
    _run(a, state)
    assert setup.ran == ["PAY-1"]
    assert "deleted PAY-1" in read(a)[-1]
    [entry] = setup.queue.history()
    assert entry.state == "ran"
    assert entry.decided_by == "openai-agents state.approve"


def test_answer_says_who_denied_and_the_model_reads_the_reason() -> None:
    setup = Setup()
    a = setup.agent("PAY-1")
    state = _run(a, "go").to_state()
    [item] = state.get_interruptions()
    setup.guardrails.answer(state, item, Answer("deny", reason="not today"), by="lee")
    _run(a, state)
    said = read(a)[-1]
    assert "approval_denied" in said
    assert "not today" in said
    assert setup.ran == []
    [entry] = setup.queue.history()
    assert (entry.state, entry.decided_by, entry.reason) == ("denied", "lee", "not today")


def test_state_reject_alone_tells_the_model_the_applications_message() -> None:
    setup = Setup()
    a = setup.agent("PAY-1")
    state = _run(a, "go").to_state()
    [item] = state.get_interruptions()
    state.reject(item, rejection_message="The operator said no.")
    _run(a, state)
    assert read(a)[-1] == "The operator said no."
    assert setup.ran == []


def test_an_allowed_call_is_checked_once_with_a_queue() -> None:
    setup = Setup({"delete_issue": DELETE})
    a = setup.agent("PAY-1")
    result = _run(a, "go")
    assert result.interruptions == []
    assert setup.ran == ["PAY-1"]
    assert [e.code for e in setup.events] == [None]


def test_a_session_that_ends_with_the_run_keeps_the_pending_refusal() -> None:
    """A resumed run would be a new session, where the answer could never apply."""
    setup = Setup(session="run")
    a = setup.agent("PAY-1")
    result = _run(a, "go")
    assert result.interruptions == []
    [request] = setup.queue.pending()
    assert "approval_pending" in read(a)[0]
    assert request.id in read(a)[0]
    assert setup.ran == []
