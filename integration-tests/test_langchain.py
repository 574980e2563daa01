"""The shared scenario through LangChain's real agent loop: ``create_agent`` with a scripted
chat model that calls ``propose_fix`` (a tool that declares nothing) once, for a user who may
not open the pull request and for one who may, sync and async, guarded by
``ToolpassMiddleware`` with the user in the run's context.

No rule is needed: the request hook checks what the tool does. The refusal raised inside the
tool's body reaches the model as an error ``ToolMessage`` instead of ending the run.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from scenario import ARGUMENTS, MAY, MAY_NOT, Scenario
from toolpass.langchain import ToolpassMiddleware

for _name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
    os.environ[_name] = "false"  # read at run time: no trace leaves for LangSmith


class ScriptedChat(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


@dataclass
class Context:
    user_id: str


def drive(s: Scenario, user: str, mode: str) -> ToolMessage:
    model = ScriptedChat(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "propose_fix", "args": dict(ARGUMENTS), "id": "p"}]
                ),
                "done",
            ]
        )
    )
    agent: Any = create_agent(
        model,
        tools=[s.propose_fix],
        middleware=[ToolpassMiddleware(s.engine)],
        context_schema=Context,
    )
    go = {"messages": [HumanMessage("Fix the typo in the README")]}
    if mode == "sync":
        state = agent.invoke(go, context=Context(user))
    else:
        state = asyncio.run(agent.ainvoke(go, context=Context(user)))
    assert state["messages"][-1].content == "done"  # the run went on after the tool call
    [reply] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    return reply


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_pull_request_the_user_may_not_open_never_leaves(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY_NOT, mode)
        # Whatever refused it, the refusal raised inside the tool's body reached the model
        # as an error ToolMessage and the run went on.
        assert reply.status == "error"
        assert str(reply.content).startswith("Refused by toolpass (")
        s.assert_refused(str(reply.content))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_pull_request_the_user_may_open_is_opened(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY, mode)
        assert reply.status == "success"
        s.assert_opened(str(reply.content))
