"""The shared conformance suite through Strands' real agent loop (``agent(...)`` and
``agent.invoke_async(...)`` with a scripted model), guarded by ``ToolpassAuthorization``."""

from __future__ import annotations

from typing import Any

from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from strands import Agent, tool
from strands_script import ScriptedModel, read_back
from toolpass.strands import ToolpassAuthorization


def _transcript(agent: Agent, result: Any) -> Transcript:
    return Transcript(read_back(agent), str(result).strip())


class TestIntervention(AdapterConformance):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Agent:
        return Agent(
            model=ScriptedModel([(c.tool, c.arguments) for c in script]),
            tools=[tool(f) for f in tools.functions()],
            interventions=[ToolpassAuthorization(engine, rules, strict=strict, **options)],
            callback_handler=None,
        )

    def run(self, agent: Agent, user: str | None) -> Transcript:
        state = {} if user is None else {"user_id": user}
        return _transcript(agent, agent("go", invocation_state=state))

    async def arun(self, agent: Agent, user: str | None) -> Transcript:
        state = {} if user is None else {"user_id": user}
        return _transcript(agent, await agent.invoke_async("go", invocation_state=state))
