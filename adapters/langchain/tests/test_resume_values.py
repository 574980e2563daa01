"""A LangGraph resume value toolpass cannot read as a person's answer, through the real
loop: it denies the call (the model reads why), it never crashes the run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DANA_MAY_DELETE_PAY_1, DELETE, Context, Tools, scripted
from toolpass import ApprovalQueue, Toolkit
from toolpass.adapting import Traits
from toolpass.langchain import ToolpassMiddleware

UNREADABLE = [
    {"decision": "edit"},  # an edit without the arguments the person wrote
    {"decision": "edit", "arguments": ["PAY-2"]},
    {"decision": ["approve"]},
    {"type": {"approve": True}},
]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("value", UNREADABLE)
def test_an_unreadable_resume_value_denies_and_the_run_goes_on(mode: str, value: Any) -> None:
    queue, tools = ApprovalQueue(), Tools()
    guard = ToolpassMiddleware(
        ScriptedEngine(DANA_MAY_DELETE_PAY_1),
        {"delete_issue": Traits(approve=True, rule=DELETE)},
        toolkit=Toolkit(approver=queue, audit=[]),
    )
    agent = create_agent(
        scripted([Call("delete_issue", {"key": "PAY-1"})]),
        tools=tools.all(),
        middleware=[guard],
        context_schema=Context,
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t-1"}}
    context = Context(DANA)

    def go(given: Any) -> Any:
        if mode == "sync":
            return agent.invoke(given, config, context=context)
        return asyncio.run(agent.ainvoke(given, config, context=context))

    paused = go({"messages": [HumanMessage("go")]})
    [request] = queue.pending()
    assert paused["__interrupt__"][0].value["request_id"] == request.id
    done = go(Command(resume=value))
    [read] = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert "approval_denied" in str(read.content)
    assert tools.ran == []
    assert queue.state(request.id) != "pending"
