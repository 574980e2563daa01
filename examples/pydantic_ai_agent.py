"""The helpdesk story (examples/helpdesk.py) through Pydantic AI's real agent loop, offline.

An ``Agent`` on a scripted ``FunctionModel`` (no API key), guarded by the
``ToolpassAuthorization`` capability; the user comes from the run's deps, the conversation
from the session callable. The deploy waits for a person: the agent may output
``DeferredToolRequests``, so the run pauses in Pydantic AI's own way, the request's
``Pending.payload()`` (``request_id``, ``tool``, ``arguments``, ``reasons``...) in the pause's
metadata; once a person has decided, the run is resumed with ``DeferredToolResults``
(``ToolApproved()``, the metadata passed back) and toolpass checks the call again, so the
queue's record decides. Needs ``pip install ./core ./adapters/pydantic-ai`` (or, once
published, ``pip install toolpass-pydantic-ai``).

    python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pydantic_ai.models
from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from toolpass.pydantic_ai import ToolpassAuthorization

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False  # no real model is ever asked


@dataclass
class Deps:
    user: str  # the application's user, never the model's


capability = ToolpassAuthorization(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)
#: The paused run (its messages and the calls it waits for), if it paused.
paused: list[tuple[list[ModelMessage], DeferredToolRequests]] = []


def run(script: Script) -> list[str]:
    """The first run; the second, once a person has decided, is the first one resumed."""

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(isinstance(m, ModelResponse) for m in messages)
        if made < len(script):
            name, args = script[made]
            return ModelResponse(parts=[ToolCallPart(name, dict(args), tool_call_id=f"c{made}")])
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[Deps, Any] = Agent(
        FunctionModel(scripted),
        deps_type=Deps,
        output_type=[str, DeferredToolRequests],  # the run may pause for a person
        tools=TOOLS,
        capabilities=[capability],
    )
    before = 0
    if paused:  # the person decided on the approvals page; resume the paused run
        history, requests = paused.pop()
        before = len(_read(history))
        resume = DeferredToolResults(
            approvals={c.tool_call_id: ToolApproved() for c in requests.approvals},
            metadata=requests.metadata,  # names the request each call waits for
        )
        go_on = agent.run(
            None, deps=Deps(USER), message_history=history, deferred_tool_results=resume
        )
        result = asyncio.run(go_on)
    else:
        result = asyncio.run(agent.run("Tidy up PAY", deps=Deps(USER)))
    read = _read(result.all_messages())[before:]
    if isinstance(result.output, DeferredToolRequests):
        paused.append((result.all_messages(), result.output))
        for call in result.output.approvals:
            asked = result.output.metadata[call.tool_call_id]
            read.append(
                f"(the run pauses for a person: DeferredToolRequests {asked['type']}, "
                f"request {asked['request_id']})"
            )
    else:
        assert result.output == "done"
    return read


def _read(messages: list[ModelMessage]) -> list[str]:
    """What the model read back after each tool call."""
    return [
        part.model_response_str()
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


if __name__ == "__main__":
    main("Pydantic AI", run)
