"""A scripted model for Pydantic AI's real agent loop: it makes the given tool calls, one
per model response, then answers "done"; and what the model read back after each call."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel


def scripted(calls: Sequence[tuple[str, dict[str, Any]]], final: str = "done") -> FunctionModel:
    """The state is read from the messages, so one model serves concurrent runs."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(
            isinstance(part, ToolCallPart)
            for message in messages
            if isinstance(message, ModelResponse)
            for part in message.parts
        )
        if made < len(calls):
            tool, arguments = calls[made]
            return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=f"c{made}")])
        return ModelResponse(parts=[TextPart(final)])

    return FunctionModel(respond)


def read_back(messages: Sequence[ModelMessage]) -> list[str]:
    """What the model read after each tool call, as Pydantic AI serializes it for a model."""
    out: list[str] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    out.append(part.model_response_str())
                elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                    out.append(part.model_response())
    return out


def run_sync(agent: Agent[Any, Any], prompt: str, **options: Any) -> Any:
    """``agent.run_sync``, then close the event loop it left set on this thread (it keeps one
    per thread; an unclosed loop would warn when collected)."""
    try:
        return agent.run_sync(prompt, **options)
    finally:
        loop = asyncio.get_event_loop_policy().get_event_loop()
        loop.close()
        asyncio.set_event_loop(None)
