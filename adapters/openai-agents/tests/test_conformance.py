"""The shared conformance suite, through the Agents SDK's real loop (``Runner.run`` and
``Runner.run_sync``) with the SDK's scripted model."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from agents import Agent, Runner, RunResult, RunState, function_tool
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from scripted import Ctx, agent, run_sync, transcript
from toolpass.adapting import Answer, Rules
from toolpass.openai_agents import ToolpassGuardrails


def _paused(agent: Agent[Any], result: RunResult, user: str | None) -> Transcript:
    """The run's transcript; when it paused, the interruptions' payloads and its state."""
    out = transcript(agent, result)
    if result.interruptions:
        guardrails = agent.toolpass  # type: ignore[attr-defined]
        out.pending = [guardrails.pending(item) for item in result.interruptions]
        out.final = ""
        out.state = (result.to_state().to_json(), user)
    return out


async def _resume(agent: Agent[Any], paused: Transcript, answer: Answer) -> Transcript:
    """Resume as another process would: the state from its JSON, for the agent built anew,
    each interruption answered through the agent's guardrails (``state.approve`` underneath)."""
    saved, user = paused.state
    state = await RunState.from_json(agent, saved, context_override=Ctx(user))
    for item in state.get_interruptions():
        agent.toolpass.answer(state, item, answer)  # type: ignore[attr-defined]
    result = await Runner.run(agent, state)
    return _paused(agent, result, user)


class TestOpenAIAgents(AdapterConformance):
    """Pauses natively: ``needs_approval`` is toolpass's check; the run's interruptions are
    resumed from the run state's JSON by an agent built anew."""

    pauses = "native"

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Agent[Any]:
        built = agent(script, [function_tool(f) for f in tools.functions()])
        guardrails = ToolpassGuardrails(engine, cast(Rules, rules), strict=strict, **options)
        built.toolpass = guardrails  # type: ignore[attr-defined]
        return guardrails.apply(built)

    def run(self, agent: Agent[Any], user: str | None) -> Transcript:
        return _paused(agent, run_sync(agent, Ctx(user)), user)

    async def arun(self, agent: Agent[Any], user: str | None) -> Transcript:
        return _paused(agent, await Runner.run(agent, "go", context=Ctx(user)), user)

    def resume(self, agent: Agent[Any], paused: Transcript, answer: Answer) -> Transcript:
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(_resume(agent, paused, answer))
        finally:
            loop.close()

    async def aresume(self, agent: Agent[Any], paused: Transcript, answer: Answer) -> Transcript:
        return await _resume(agent, paused, answer)
