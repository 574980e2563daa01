"""The shared conformance suite, through the Agents SDK's real loop (``Runner.run`` and
``Runner.run_sync``) with the SDK's scripted model."""

from __future__ import annotations

from typing import Any, cast

from agents import Agent, Runner, function_tool
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from scripted import Ctx, agent, run_sync, transcript
from toolpass.adapting import Rules
from toolpass.openai_agents import ToolpassGuardrails


class TestOpenAIAgents(AdapterConformance):
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
        return ToolpassGuardrails(engine, cast(Rules, rules), strict=strict, **options).apply(built)

    def run(self, agent: Agent[Any], user: str | None) -> Transcript:
        return transcript(agent, run_sync(agent, Ctx(user)))

    async def arun(self, agent: Agent[Any], user: str | None) -> Transcript:
        return transcript(agent, await Runner.run(agent, "go", context=Ctx(user)))
