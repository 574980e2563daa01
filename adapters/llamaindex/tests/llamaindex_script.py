"""A scripted model for LlamaIndex's real agent loop (``MockFunctionCallingLLM``): it makes
the given tool calls, one per model response, then answers "done"; and what the model read
back after each call (the run's memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context


def scripted(
    calls: Sequence[tuple[str, dict[str, Any]]], final: str = "done"
) -> MockFunctionCallingLLM:
    """The state is read from the messages, so one model serves concurrent runs."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        made = sum(m.role == MessageRole.TOOL for m in messages)
        if made < len(calls):
            tool, arguments = calls[made]
            block = ToolCallBlock(tool_call_id=f"c{made}", tool_name=tool, tool_kwargs=arguments)
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])
        return ChatMessage(role=MessageRole.ASSISTANT, content=final)

    return MockFunctionCallingLLM(response_generator=respond)


async def read_back(ctx: Context[Any]) -> list[str]:
    """What the model read after each tool call: the run's tool messages, in order."""
    memory = await ctx.store.get("memory")
    messages = await memory.aget_all()
    return [str(m.content) for m in messages if m.role == MessageRole.TOOL]


async def run_for(
    agent: FunctionAgent | Any, user: str | None, *, key: str = "user_id", message: str = "go"
) -> tuple[list[str], str, Context[Any]]:
    """Run ``agent`` once for ``user`` (set in a new workflow context's store, as an
    application does); what the model read back, its final answer, and the context."""
    ctx: Context[Any] = Context(agent)
    if user is not None:
        await ctx.store.set(key, user)
    result = await agent.run(message, ctx=ctx)
    return await read_back(ctx), str(result), ctx


#: LlamaIndex itself warns as it builds an agent (``inspect.getmembers`` reads pydantic's
#: deprecated ``__fields__``), as a reused ``Context`` is saved (its memory cannot be
#: serialized) and as ReActAgent asks ``ctx.is_running`` in a step; none is toolpass's, and
#: warnings are errors in these tests.
FRAMEWORK_WARNINGS = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning:inspect"),
    pytest.mark.filterwarnings("ignore:Skipping serialization of known unserializable key"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]
