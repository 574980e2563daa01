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
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context, JsonPickleSerializer
from toolpass.llamaindex import ApprovalRequired, ToolpassAuthorization

warnings.filterwarnings("ignore", module="inspect")  # LlamaIndex reads deprecated attributes
warnings.filterwarnings("ignore", "Skipping serialization")  # LlamaIndex's own note
guard = ToolpassAuthorization(
    engine, RULES, toolkit=kit, session=lambda _: CONVERSATION, approvals="events"
)
#: The run paused for a person: its saved ``Context`` and the ``ApprovalRequired`` event.
paused: dict[str, Any] = {}


async def arun(script: Script) -> list[str]:
    """The first run; the second resumes the run the first paused, its ``Context`` restored
    with the person's answer to the ``ApprovalRequired`` (``event.decide(...)``; here the
    person decided on the approvals page too, whose record decides): a call waiting for
    approval pauses the step."""
    if paused:
        script = []  # resumed, the model is past its call: the paused call runs, then "done"

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
    if paused:  # resume: the person decided on the approvals page (the queue) already
        ctx = Context.from_dict(agent, paused.pop("ctx"), serializer=JsonPickleSerializer())
        asked: ApprovalRequired = paused.pop("asked")
        handler = agent.run(ctx=ctx)  # the paused step goes on: the queue's record decides
        handler.ctx.send_event(asked.decide(approved=True, by="lee@example.com"))
    else:
        ctx = Context(agent)
        await ctx.store.set("user_id", USER)  # the application's user, never the model's
        handler = agent.run("Tidy up PAY", ctx=ctx)
    read: list[str] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            read.append(str(event.tool_output.content))
        if isinstance(event, ApprovalRequired):  # the step waits: save the run, stop it
            paused.update(ctx=handler.ctx.to_dict(serializer=JsonPickleSerializer()), asked=event)
            await handler.cancel_run()
            kind = event.payload["type"]
            return [*read, f"(the run pauses: ApprovalRequired {kind} {event.request_id})"]
    assert str(await handler) == "done"
    return read


def run(script: Script) -> list[str]:
    return asyncio.run(arun(script))  # LlamaIndex runs agents only asynchronously


if __name__ == "__main__":
    main("LlamaIndex", run)
