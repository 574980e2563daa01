"""An agent on the SDK's real loop with the SDK's own scripted model, and its transcript."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any

from agents import Agent, Runner, RunResult
from agents.testing import ScriptedModel, assistant_message, function_call
from pytest_toolpass import Call, Transcript

_models = itertools.count(1)


@dataclass
class Ctx:
    """What the application passes as the run's context."""

    user_id: str | None = None


def model(script: list[Call], final: str = "done") -> ScriptedModel:
    """Makes ``script``'s calls, one per turn, then answers ``final``."""
    n = next(_models)  # call ids unique across the models of one run (handoffs share history)
    steps: list[Any] = [
        [function_call(c.tool, c.arguments, call_id=f"call_{n}_{i}")] for i, c in enumerate(script)
    ]
    steps.append([assistant_message(final)])
    return ScriptedModel(steps)


def agent(script: list[Call], tools: list[Any], **options: Any) -> Agent[Any]:
    return Agent(
        name="kit", instructions="Use the tools.", model=model(script), tools=tools, **options
    )


def read(agent: Agent[Any]) -> list[str]:
    """What the model read back after each tool call: the function_call_output items of the
    last request it was sent, in order."""
    scripted = agent.model
    assert isinstance(scripted, ScriptedModel)
    last = scripted.last_call
    assert last is not None
    items = last.input if isinstance(last.input, list) else []
    return [
        str(i["output"])
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


def transcript(agent: Agent[Any], result: RunResult) -> Transcript:
    return Transcript(read(agent), str(result.final_output))


def run_sync(agent: Agent[Any], context: Any, input: str = "go") -> RunResult:
    """``Runner.run_sync`` on a loop of its own, closed afterwards (the SDK keeps a thread's
    default loop open on purpose, which tests in threads would leak)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return Runner.run_sync(agent, input, context=context)
    finally:
        asyncio.set_event_loop(None)
        loop.close()
