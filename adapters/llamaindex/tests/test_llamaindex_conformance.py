"""The shared conformance suite through LlamaIndex's real agent loop (``FunctionAgent.run``
and ``AgentWorkflow.run`` with a scripted ``MockFunctionCallingLLM``): the agent's tool-call
step guarded with ``apply``, the tools wrapped with ``wrap``, and a multi-agent workflow.

LlamaIndex agents run only asynchronously (``await agent.run(...)``; there is no sync run),
so the suite's sync variants do not apply."""

from __future__ import annotations

from typing import Any, ClassVar

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llamaindex_script import FRAMEWORK_WARNINGS, run_for, scripted
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.llamaindex import ToolpassAuthorization

pytestmark = FRAMEWORK_WARNINGS


class TestApplied(AdapterConformance):
    sync_run: ClassVar[bool] = False

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Any:
        guard = ToolpassAuthorization(engine, rules, strict=strict, **options)
        agent = FunctionAgent(
            tools=tools.functions(), llm=scripted([(c.tool, c.arguments) for c in script])
        )
        return guard.apply(agent)

    async def arun(self, agent: Any, user: str | None) -> Transcript:
        outputs, final, _ = await run_for(agent, user)
        return Transcript(outputs, final)


class TestWrapped(TestApplied):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Any:
        guard = ToolpassAuthorization(engine, rules, strict=strict, **options)
        return FunctionAgent(
            tools=guard.wrap(tools.functions()),
            llm=scripted([(c.tool, c.arguments) for c in script]),
        )


class TestAgentWorkflow(TestApplied):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Any:
        guard = ToolpassAuthorization(engine, rules, strict=strict, **options)
        agent = FunctionAgent(
            name="ops",
            description="Does the work.",
            tools=tools.functions(),
            llm=scripted([(c.tool, c.arguments) for c in script]),
        )
        return guard.apply(AgentWorkflow(agents=[agent]))
