"""The shared conformance suite through Strands' real agent loop (``agent(...)`` and
``agent.invoke_async(...)`` with a scripted model), guarded by ``ToolpassAuthorization``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from strands import Agent, tool
from strands_script import ScriptedModel, read_back
from toolpass.adapting import Answer
from toolpass.strands import ToolpassAuthorization


def _transcript(agent: Agent, result: Any, state: dict[str, Any]) -> Transcript:
    pending = [i.reason for i in getattr(result, "interrupts", None) or ()]
    out = Transcript(read_back(agent), str(result).strip(), pending=pending)
    out.state = (agent, result, state)
    return out


def _response(result: Any, answer: Answer) -> list[dict[str, Any]]:
    value = asdict(answer)
    return [
        {"interruptResponse": {"interruptId": i.id, "response": value}} for i in result.interrupts
    ]


class TestIntervention(AdapterConformance):
    """Resumes the paused agent itself: Strands keeps a run's interrupts on the agent (or in
    its session manager), so the agent built anew for the resume is not used."""

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
    ) -> Agent:
        return Agent(
            model=ScriptedModel([(c.tool, c.arguments) for c in script]),
            tools=[tool(f) for f in tools.functions()],
            interventions=[ToolpassAuthorization(engine, rules, strict=strict, **options)],
            callback_handler=None,
        )

    def run(self, agent: Agent, user: str | None) -> Transcript:
        state = {} if user is None else {"user_id": user}
        return _transcript(agent, agent("go", invocation_state=state), state)

    async def arun(self, agent: Agent, user: str | None) -> Transcript:
        state = {} if user is None else {"user_id": user}
        return _transcript(agent, await agent.invoke_async("go", invocation_state=state), state)

    def resume(self, agent: Agent, paused: Transcript, answer: Answer) -> Transcript:
        agent, result, state = paused.state
        resumed = agent(_response(result, answer), invocation_state=state)
        return _transcript(agent, resumed, state)

    async def aresume(self, agent: Agent, paused: Transcript, answer: Answer) -> Transcript:
        agent, result, state = paused.state
        resumed = await agent.invoke_async(_response(result, answer), invocation_state=state)
        return _transcript(agent, resumed, state)
