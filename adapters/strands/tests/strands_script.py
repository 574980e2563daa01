"""A scripted model for Strands' real agent loop: it makes the given tool calls, one per model
response, then answers "done"; and what the model read back after each call.

Strands ships no fake model, so this subclasses ``strands.models.model.Model`` and streams
Bedrock-Converse-style events, as every Strands model provider does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from strands import Agent
from strands.models.model import Model


class ScriptedModel(Model):
    """The state is read from the messages, so one model serves concurrent runs."""

    def __init__(self, calls: Sequence[tuple[str, dict[str, Any]]], final: str = "done") -> None:
        self.calls = list(calls)
        self.final = final
        self.config: dict[str, Any] = {}
        self.seen: list[list[Any]] = []  # the messages of each request

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model answers in text")

    async def stream(
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: Any = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        self.seen.append(list(messages))
        made = sum(
            "toolUse" in block
            for message in messages
            if message["role"] == "assistant"
            for block in message["content"]
        )
        yield {"messageStart": {"role": "assistant"}}
        if made < len(self.calls):
            tool, arguments = self.calls[made]
            start = {"toolUse": {"toolUseId": f"c{made}", "name": tool}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": self.final}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def results(agent: Agent) -> list[dict[str, Any]]:
    """The tool results the model was given, in order."""
    return [
        block["toolResult"]
        for message in agent.messages
        if message["role"] == "user"
        for block in message["content"]
        if "toolResult" in block
    ]


def read_back(agent: Agent) -> list[str]:
    """What the model read after each tool call."""
    return [
        " ".join(str(part.get("text", part.get("json", ""))) for part in result["content"])
        for result in results(agent)
    ]
