"""The helpdesk story (examples/helpdesk.py) through Pydantic AI's real agent loop, offline.

An ``Agent`` on a scripted ``FunctionModel`` (no API key), guarded by the
``ToolpassAuthorization`` capability; the user comes from the run's deps, the conversation
from the session callable. Needs ``pip install ./core ./adapters/pydantic-ai`` (or, once
published, ``pip install toolpass-pydantic-ai``).

    python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pydantic_ai.models
from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from pydantic_ai import Agent
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


def run(script: Script) -> list[str]:
    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(isinstance(m, ModelResponse) for m in messages)
        if made < len(script):
            name, args = script[made]
            return ModelResponse(parts=[ToolCallPart(name, dict(args), tool_call_id=f"c{made}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(scripted), deps_type=Deps, tools=TOOLS, capabilities=[capability])
    result = asyncio.run(agent.run("Tidy up PAY", deps=Deps(USER)))
    assert result.output == "done"
    return [
        part.model_response_str()
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


if __name__ == "__main__":
    main("Pydantic AI", run)
