"""The shared conformance suite through Pydantic AI's real agent loop (``Agent.run_sync`` and
``Agent.run`` with a scripted ``FunctionModel``), guarded by ``ToolpassAuthorization``; and
the same suite with ``ToolpassToolset`` around the agent's toolset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai_script import read_back, run_sync, scripted
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.adapting import Answer
from toolpass.pydantic_ai import ToolpassAuthorization, ToolpassToolset


@dataclass
class Deps:
    user: str | None


def _transcript(result: Any, deps: Deps | None = None) -> Transcript:
    output = result.output
    if not isinstance(output, DeferredToolRequests):
        return Transcript(read_back(result.all_messages()), str(output))
    pending = [output.metadata[c.tool_call_id] for c in output.approvals]
    out = Transcript(read_back(result.all_messages()), "", pending=pending)
    out.state = (result.all_messages(), output, deps)
    return out


def _results(requests: DeferredToolRequests, answer: Answer) -> DeferredToolResults:
    """The answer as Pydantic AI's own resume value: ``ToolApproved`` (with
    ``override_args`` for an edit) or ``ToolDenied(message=)``; the pause's metadata passed
    back (an answer naming a request says which), with who decided."""
    results = DeferredToolResults()
    for call in requests.approvals:
        metadata = dict(requests.metadata.get(call.tool_call_id) or {})
        if answer.request_id is not None:
            metadata["request_id"] = answer.request_id
        results.metadata[call.tool_call_id] = {**metadata, "by": answer.by}
        if answer.decision == "deny":
            results.approvals[call.tool_call_id] = ToolDenied(message=answer.reason)
        elif answer.decision == "edit":
            edited = dict(answer.arguments or {})
            results.approvals[call.tool_call_id] = ToolApproved(override_args=edited)
        else:
            results.approvals[call.tool_call_id] = ToolApproved()
    return results


class TestCapability(AdapterConformance):
    """Pauses natively: the run ends with ``DeferredToolRequests`` and is resumed with
    ``DeferredToolResults`` by an agent built anew (the message history is the run's state)."""

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
    ) -> Agent[Deps, str]:
        return Agent(
            scripted([(c.tool, c.arguments) for c in script]),
            deps_type=Deps,
            tools=tools.functions(),
            output_type=[str, DeferredToolRequests],
            capabilities=[ToolpassAuthorization(engine, rules, strict=strict, **options)],
        )

    def run(self, agent: Agent[Deps, str], user: str | None) -> Transcript:
        return _transcript(run_sync(agent, "go", deps=Deps(user)), Deps(user))

    async def arun(self, agent: Agent[Deps, str], user: str | None) -> Transcript:
        return _transcript(await agent.run("go", deps=Deps(user)), Deps(user))

    def resume(self, agent: Agent[Deps, str], paused: Transcript, answer: Answer) -> Transcript:
        history, requests, deps = paused.state
        results = _results(requests, answer)
        resumed = run_sync(
            agent, None, deps=deps, message_history=history, deferred_tool_results=results
        )
        return _transcript(resumed, deps)

    async def aresume(
        self, agent: Agent[Deps, str], paused: Transcript, answer: Answer
    ) -> Transcript:
        history, requests, deps = paused.state
        results = _results(requests, answer)
        resumed = await agent.run(deps=deps, message_history=history, deferred_tool_results=results)
        return _transcript(resumed, deps)


class TestToolset(TestCapability):
    """A toolset has no hook on a resume's denials: its approvals stay refusals."""

    pauses = "refuses"

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
