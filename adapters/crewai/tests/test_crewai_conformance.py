"""The shared conformance suite through CrewAI's real crew loop (``Crew.kickoff`` and
``Crew.akickoff`` with a scripted ``BaseLLM``, native tool calling), guarded by
``ToolpassHooks`` around the kickoff; and the same suite on CrewAI's ReAct text path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crewai import Crew
from crewai_script import ScriptedLLM, crew, crew_tools
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.crewai import ToolpassHooks


@dataclass
class Guarded:
    crew: Crew
    llm: ScriptedLLM
    hooks: ToolpassHooks


def _inputs(user: str | None) -> dict[str, Any]:
    return {"user_id": user} if user is not None else {}


class TestNativeToolCalling(AdapterConformance):
    native = True

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Guarded:
        hooks = ToolpassHooks(engine, rules, strict=strict, **options)
        built, llm = crew(
            [(c.tool, c.arguments) for c in script],
            crew_tools(tools.functions()),
            native=self.native,
        )
        return Guarded(built, llm, hooks)

    def run(self, agent: Guarded, user: str | None) -> Transcript:
        with agent.hooks:
            result = agent.crew.kickoff(inputs=_inputs(user))
        return Transcript(agent.llm.outputs, str(result.raw))

    async def arun(self, agent: Guarded, user: str | None) -> Transcript:
        with agent.hooks:
            result = await agent.crew.akickoff(inputs=_inputs(user))
        return Transcript(agent.llm.outputs, str(result.raw))


class TestReAct(TestNativeToolCalling):
    native = False
