"""The helpdesk story (examples/helpdesk.py) through LlamaIndex's real agent loop, offline.

A ``FunctionAgent`` on LlamaIndex's ``MockFunctionCallingLLM`` with a scripted response
generator (no API key), its tool-call step guarded by ``ToolpassAuthorization.apply``; the
user comes from the workflow context's store, the conversation from the session callable.
Needs ``pip install ./core ./adapters/llamaindex`` (or, once published,
``pip install toolpass-llamaindex``).

    python examples/llamaindex_agent.py
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context
from toolpass.llamaindex import ToolpassAuthorization

warnings.filterwarnings("ignore", module="inspect")  # LlamaIndex reads deprecated attributes
guard = ToolpassAuthorization(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)


async def arun(script: Script) -> list[str]:
    def scripted(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        made = sum(m.role == MessageRole.TOOL for m in messages)
        if made < len(script):
            name, args = script[made]
            call = ToolCallBlock(tool_call_id=f"call-{made}", tool_name=name, tool_kwargs=args)
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="done")

    llm = MockFunctionCallingLLM(response_generator=scripted)
    agent = guard.apply(
        FunctionAgent(name="helpdesk", description="Tidies up.", tools=TOOLS, llm=llm)
    )
    ctx: Context[Any] = Context(agent)
    await ctx.store.set("user_id", USER)  # the application's user, never the model's
    answer = await agent.run("Tidy up PAY", ctx=ctx)
    assert str(answer) == "done"
    memory = await ctx.store.get("memory")
    return [str(m.content) for m in await memory.aget_all() if m.role == MessageRole.TOOL]


def run(script: Script) -> list[str]:
    return asyncio.run(arun(script))  # LlamaIndex runs agents only asynchronously


if __name__ == "__main__":
    main("LlamaIndex", run)
