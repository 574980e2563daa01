"""The shared scenario through LlamaIndex's real agent loop: a ``FunctionAgent`` (alone, or
in an ``AgentWorkflow``) with a scripted ``MockFunctionCallingLLM`` that calls
``propose_fix`` (a tool that declares nothing) once, for a user who may not open the pull
request and for one who may, with the user in the workflow context's store. The agent's
tool-call step is guarded with ``ToolpassAuthorization.apply``, or the tool with ``wrap``.

LlamaIndex runs only asynchronously (``await agent.run(...)``); the tool is synchronous, so
LlamaIndex runs it in a worker thread, where the request hook still sees the call. No rule is
needed: the request hook checks what the tool does. The refusal raised inside the tool's body
reaches the model as an error tool result instead of the raw exception, and the run goes on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context
from scenario import ARGUMENTS, MAY, MAY_NOT, Scenario
from toolpass.llamaindex import ToolpassAuthorization

# LlamaIndex itself warns as it builds an agent (inspect.getmembers reads pydantic's
# deprecated attributes); warnings are errors here.
pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecationWarning:inspect"
)


def propose_once(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    if not any(m.role == MessageRole.TOOL for m in messages):
        call = ToolCallBlock(tool_call_id="p", tool_name="propose_fix", tool_kwargs=dict(ARGUMENTS))
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
    return ChatMessage(role=MessageRole.ASSISTANT, content="done")


async def run(s: Scenario, user: str, mode: str) -> tuple[ToolCallResult, str]:
    guard = ToolpassAuthorization(s.engine)
    llm = MockFunctionCallingLLM(response_generator=propose_once)
    tools = guard.wrap([s.propose_fix]) if mode == "wrap" else [s.propose_fix]
    agent: Any = FunctionAgent(name="fixer", description="Fixes typos.", tools=tools, llm=llm)
    if mode == "apply":
        agent = guard.apply(agent)
    elif mode == "workflow":
        agent = guard.apply(AgentWorkflow(agents=[agent]))
    ctx: Context[Any] = Context(agent)
    await ctx.store.set("user_id", user)  # the application's, never the model's
    handler = agent.run("Fix the typo in the README", ctx=ctx)
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    answer = await handler
    memory = await ctx.store.get("memory")
    read = [str(m.content) for m in await memory.aget_all() if m.role == MessageRole.TOOL]
    [result] = results
    assert read == [result.tool_output.content]  # what the model read
    return result, str(answer)


MODES = ["apply", "wrap", "workflow"]


@pytest.mark.parametrize("mode", MODES)
def test_the_pull_request_the_user_may_not_open_never_leaves(mode: str) -> None:
    with Scenario() as s:
        result, answer = asyncio.run(run(s, MAY_NOT, mode))
        assert answer == "done"  # the run went on after the refusal
        output = result.tool_output
        assert output.is_error
        assert output.content.startswith("Refused by toolpass (")
        s.assert_refused(output.content)


@pytest.mark.parametrize("mode", MODES)
def test_the_pull_request_the_user_may_open_is_opened(mode: str) -> None:
    with Scenario() as s:
        result, answer = asyncio.run(run(s, MAY, mode))
        assert answer == "done"
        assert not result.tool_output.is_error
        s.assert_opened(result.tool_output.content)
