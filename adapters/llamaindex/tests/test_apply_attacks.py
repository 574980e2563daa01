"""Attacks on ``apply``: an applied agent that runs inside an ``AgentWorkflow`` made later (the
workflow, not the agent, runs its tool calls), and a ``CodeActAgent`` given an unchecked tool
after ``apply``. Through LlamaIndex's real loop with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.agent.workflow import (
    AgentWorkflow,
    CodeActAgent,
    FunctionAgent,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool, ToolOutput
from llama_index.core.workflow import Context
from llamaindex_script import FRAMEWORK_WARNINGS, run_for, scripted
from pytest_toolpass import ScriptedEngine
from toolpass import Decision, Toolkit
from toolpass.llamaindex import Rule, ToolpassAuthorization

pytestmark = FRAMEWORK_WARNINGS

DANA = "dana@example.com"
RULES = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
MAY = {(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()}


def deleter(ran: list[str]) -> Any:
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return f"deleted {key}"

    return delete_issue


def test_an_applied_agent_inside_a_later_workflow_is_still_checked() -> None:
    ran: list[str] = []
    agent = FunctionAgent(
        name="fixer",
        description="Deletes.",
        tools=[deleter(ran)],
        llm=scripted([("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"})]),
    )
    ToolpassAuthorization(ScriptedEngine(MAY), RULES).apply(agent)
    workflow = AgentWorkflow(agents=[agent])  # the workflow runs the agent's tool calls
    read, _, _ = asyncio.run(run_for(workflow, DANA))
    assert ran == ["PAY-1"]
    assert read[1].startswith("Refused by toolpass (not_authorized)")


async def run_code(code: str) -> dict[str, Any]:
    raise AssertionError("the code must never run")


def writes_code(code: str) -> MockFunctionCallingLLM:
    """A CodeActAgent's model: code to run first, then "done"."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if any(m.role == MessageRole.ASSISTANT for m in messages):
            return ChatMessage(role=MessageRole.ASSISTANT, content="done")
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"<execute>{code}</execute>")

    return MockFunctionCallingLLM(response_generator=respond)


def test_a_code_act_agent_given_a_plain_tool_after_apply_refuses_to_run_code() -> None:
    ran: list[str] = []
    secured = Toolkit().secured_tool(effect="destructive")(deleter(ran))
    coder = CodeActAgent(
        code_execute_fn=run_code,
        tools=[secured],
        llm=writes_code("delete_all('PAY-2')"),
    )
    guard = ToolpassAuthorization(ScriptedEngine(MAY), RULES)
    guard.apply(coder)
    assert coder.tools is not None
    coder.tools.append(FunctionTool.from_defaults(deleter(ran), name="delete_all"))
    outputs = asyncio.run(tool_outputs(coder, DANA))
    assert ran == []
    assert [o.tool_name for o in outputs] == ["execute"]
    assert outputs[0].content.startswith("Refused by toolpass (not_configured)")
    assert "delete_all" not in outputs[0].content  # the model is not told which tool to drop


async def tool_outputs(agent: Any, user: str) -> list[ToolOutput]:
    ctx: Context[Any] = Context(agent)
    await ctx.store.set("user_id", user)
    handler = agent.run("go", ctx=ctx)
    outputs = [
        e.tool_output async for e in handler.stream_events() if isinstance(e, ToolCallResult)
    ]
    await handler
    return outputs
