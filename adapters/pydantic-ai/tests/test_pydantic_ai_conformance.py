"""The shared conformance suite through Pydantic AI's real agent loop (``Agent.run_sync`` and
``Agent.run`` with a scripted ``FunctionModel``), guarded by ``ToolpassAuthorization``; and
the same suite with ``ToolpassToolset`` around the agent's toolset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai_script import read_back, run_sync, scripted
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.pydantic_ai import ToolpassAuthorization, ToolpassToolset


@dataclass
class Deps:
    user: str | None


def _transcript(result: Any) -> Transcript:
    return Transcript(read_back(result.all_messages()), str(result.output))


class TestCapability(AdapterConformance):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Agent[Deps, str]:
        return Agent(
            scripted([(c.tool, c.arguments) for c in script]),
            deps_type=Deps,
            tools=tools.functions(),
            capabilities=[ToolpassAuthorization(engine, rules, strict=strict, **options)],
        )

    def run(self, agent: Agent[Deps, str], user: str | None) -> Transcript:
        return _transcript(run_sync(agent, "go", deps=Deps(user)))

    async def arun(self, agent: Agent[Deps, str], user: str | None) -> Transcript:
        return _transcript(await agent.run("go", deps=Deps(user)))


class TestToolset(TestCapability):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Agent[Deps, str]:
        toolset = ToolpassToolset(
            FunctionToolset(tools.functions()), engine, rules, strict=strict, **options
        )
        return Agent(
            scripted([(c.tool, c.arguments) for c in script]),
            deps_type=Deps,
            toolsets=[toolset],
        )
