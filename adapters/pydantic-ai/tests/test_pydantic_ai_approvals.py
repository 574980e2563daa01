"""Approvals in Pydantic AI's own pause, through its real agent loop with a scripted model:
``ApprovalRequired`` carrying the request, ``DeferredToolResults`` resuming it through the
approval machine, the refusal where the agent cannot pause, and ``wait_for_person``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool, ToolDenied
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai_script import read_back, run_sync, scripted
from pytest_toolpass import ScriptedEngine
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit
from toolpass.adapting import Traits
from toolpass.pydantic_ai import Rule, ToolpassAuthorization, wait_for_person

DANA = "dana@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")
#: Sends out private, untrusted data: every call asks a person.
ASKS = Traits(
    effect="destructive", sends_out=True, reads_private=True, untrusted_output=True, rule=DELETE
)


@dataclass
class Deps:
    user: str


class Recorder:
    def __init__(self) -> None:
        self.ran: list[str] = []

    def delete_issue(self, key: str) -> str:
        """Delete an issue."""
        self.ran.append(key)
        return f"deleted {key}"


def _agent(
    queue: ApprovalQueue,
    tools: Recorder,
    *,
    output: Any = (str, DeferredToolRequests),
    rules: Any = None,
    tool: Any = None,
    capabilities: tuple[Any, ...] = (),
    events: list[AuditEvent] | None = None,
) -> Agent[Deps, Any]:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    kit = Toolkit(approver=queue, audit=[] if events is None else [events.append])
    guard = ToolpassAuthorization(engine, rules or {"delete_issue": ASKS}, toolkit=kit)
    return Agent(
        scripted([("delete_issue", {"key": "PAY-1"})]),
        deps_type=Deps,
        output_type=list(output),
        tools=[tool or tools.delete_issue],
        capabilities=[guard, *capabilities],
    )


def test_a_denial_is_recorded_in_the_queue_with_who_decided() -> None:
    queue, tools, events = ApprovalQueue(), Recorder(), []
    agent = _agent(queue, tools, events=events)
    paused = run_sync(agent, "go", deps=Deps(DANA))
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.approvals
    request_id = requests.metadata[call.tool_call_id]["request_id"]
    results = DeferredToolResults(
        approvals={call.tool_call_id: ToolDenied("wrong project")},
        metadata={call.tool_call_id: {**requests.metadata[call.tool_call_id], "by": "lee"}},
    )
    resumed = run_sync(
        agent,
        None,
        deps=Deps(DANA),
        message_history=paused.all_messages(),
        deferred_tool_results=results,
    )
    [said] = read_back(resumed.all_messages())
    assert "approval_denied" in said
    assert "wrong project" in said
    [entry] = queue.history()
    assert (entry.id, entry.state, entry.decided_by) == (request_id, "denied", "lee")
    assert entry.reason == "wrong project"
    assert [e.code for e in events] == ["approval_pending", "approval_denied"]
    assert tools.ran == []


def test_an_agent_that_cannot_pause_reads_the_pending_refusal() -> None:
    queue, tools = ApprovalQueue(), Recorder()
    result = run_sync(_agent(queue, tools, output=(str,)), "go", deps=Deps(DANA))
    [request] = queue.pending()
    [said] = read_back(result.all_messages())
    assert "approval_pending" in said
    assert request.id in said
    assert result.output == "done"
    assert tools.ran == []


def test_the_applications_own_denial_runs_nothing_and_reads_its_message() -> None:
    queue, tools = ApprovalQueue(), Recorder()
    own = Tool(tools.delete_issue, requires_approval=True)  # the app asks, not toolpass
    agent = _agent(queue, tools, rules={"delete_issue": DELETE}, tool=own)
    paused = run_sync(agent, "go", deps=Deps(DANA))
    [call] = paused.output.approvals
    resumed = run_sync(
        agent,
        None,
        deps=Deps(DANA),
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: ToolDenied("no")}),
    )
    assert read_back(resumed.all_messages()) == ["no"]
    assert tools.ran == []
    assert queue.requests() == []


def _decide_when_asked(queue: ApprovalQueue, decide: Any) -> threading.Thread:
    def person() -> None:
        for _ in range(500):
            if pending := queue.pending():
                decide(pending[0].id)
                return
            threading.Event().wait(0.01)

    thread = threading.Thread(target=person)
    thread.start()
    return thread


def test_wait_for_person_resumes_inline_once_a_person_approves() -> None:
    queue, tools, events = ApprovalQueue(), Recorder(), []
    inline = HandleDeferredToolCalls(handler=wait_for_person(queue, 10))
    agent = _agent(queue, tools, capabilities=(inline,), events=events)
    person = _decide_when_asked(queue, lambda rid: queue.approve(rid, by="lee"))
    result = run_sync(agent, "go", deps=Deps(DANA))
    person.join()
    assert result.output == "done"
    assert read_back(result.all_messages()) == ["deleted PAY-1"]
    assert tools.ran == ["PAY-1"]


def test_wait_for_person_tells_the_model_a_denial() -> None:
    queue, tools = ApprovalQueue(), Recorder()
    inline = HandleDeferredToolCalls(handler=wait_for_person(queue, 10))
    agent = _agent(queue, tools, capabilities=(inline,))
    person = _decide_when_asked(queue, lambda rid: queue.deny(rid, by="lee", reason="not now"))
    result = run_sync(agent, "go", deps=Deps(DANA))
    person.join()
    [said] = read_back(result.all_messages())
    assert "approval_denied" in said
    assert "not now" in said
    assert tools.ran == []


def test_wait_for_person_leaves_an_undecided_request_to_the_run_output() -> None:
    queue, tools = ApprovalQueue(), Recorder()
    inline = HandleDeferredToolCalls(handler=wait_for_person(queue, 0.05))
    result = run_sync(_agent(queue, tools, capabilities=(inline,)), "go", deps=Deps(DANA))
    assert isinstance(result.output, DeferredToolRequests)
    [request] = queue.pending()
    [call] = result.output.approvals
    assert result.output.metadata[call.tool_call_id]["request_id"] == request.id
    assert tools.ran == []
