"""The shared conformance suite through Google ADK's real loop (``Runner.run``, which runs
the agent on a thread of its own, and ``Runner.run_async``) with a scripted ``BaseLlm``:
guarded by ``ToolpassCallbacks.apply`` on the agent, and by its plugin on the ``App``."""

from __future__ import annotations

from typing import Any

from adk_script import agent_with, arun, final, read_back, run, runner_for
from google.adk.runners import Runner
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.google_adk import ToolpassCallbacks


def _transcript(events: list[Any]) -> Transcript:
    return Transcript(read_back(events), final(events))


class TestApply(AdapterConformance):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Runner:
        callbacks = ToolpassCallbacks(engine, rules, strict=strict, **options)
        agent = agent_with(tools.functions(), [(c.tool, c.arguments) for c in script])
        return runner_for(callbacks.apply(agent))

    def run(self, agent: Runner, user: str | None) -> Transcript:
        return _transcript(run(agent, user or "")[0])

    async def arun(self, agent: Runner, user: str | None) -> Transcript:
        return _transcript((await arun(agent, user or ""))[0])


class TestPlugin(TestApply):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Runner:
        callbacks = ToolpassCallbacks(engine, rules, strict=strict, **options)
        agent = agent_with(tools.functions(), [(c.tool, c.arguments) for c in script])
        return runner_for(agent, [callbacks.plugin()])
