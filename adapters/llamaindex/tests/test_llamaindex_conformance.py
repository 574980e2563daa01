"""The shared conformance suite through LlamaIndex's real agent loop (``FunctionAgent.run``
and ``AgentWorkflow.run`` with a scripted ``MockFunctionCallingLLM``): the agent's tool-call
step guarded with ``apply``, the tools wrapped with ``wrap``, and a multi-agent workflow.

LlamaIndex agents run only asynchronously (``await agent.run(...)``; there is no sync run),
so the suite's sync variants do not apply.

Approvals pause natively (``approvals="events"``): the run's stream shows an
``ApprovalRequired`` event; the run's ``Context`` is saved (``ctx.to_dict`` with the
``JsonPickleSerializer``, which keeps the agent's memory) and the run
cancelled, as LlamaIndex's human-in-the-loop guide does, and the run is resumed on an agent
built anew (``Context.from_dict``) with the person's ``ApprovalDecision``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.workflow import Context, JsonPickleSerializer
from llamaindex_script import FRAMEWORK_WARNINGS, read_back, scripted
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.adapting import Answer
from toolpass.llamaindex import ApprovalDecision, ApprovalRequired, ToolpassAuthorization

pytestmark = FRAMEWORK_WARNINGS


@dataclass
class _Paused:
    saved: dict[str, Any]
    asked: list[ApprovalRequired]


async def _until_paused(handler: Any) -> Transcript:
    """Run until the run ends or waits for a person (then its context is saved and the run
    cancelled); what the model read back, and each pause's payload."""
    asked: list[ApprovalRequired] = []
    async for event in handler.stream_events():
        if isinstance(event, ApprovalRequired):
            asked.append(event)
            break
    if asked:
        outputs = await read_back(handler.ctx)
        saved = handler.ctx.to_dict(serializer=JsonPickleSerializer())
        await handler.cancel_run()
        out = Transcript(outputs, "", pending=[e.payload for e in asked])
        out.state = _Paused(saved, asked)
        return out
    final = str(await handler)
    return Transcript(await read_back(handler.ctx), final)


class TestApplied(AdapterConformance):
    sync_run: ClassVar[bool] = False
    pauses = "native"

    def guard(self, engine: Any, rules: dict[str, Any], strict: bool, **options: Any) -> Any:
        return ToolpassAuthorization(engine, rules, strict=strict, approvals="events", **options)

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
        agent = FunctionAgent(
            tools=tools.functions(), llm=scripted([(c.tool, c.arguments) for c in script])
        )
        return self.guard(engine, rules, strict, **options).apply(agent)

    async def arun(self, agent: Any, user: str | None) -> Transcript:
        ctx: Context[Any] = Context(agent)
        if user is not None:
            await ctx.store.set("user_id", user)
        return await _until_paused(agent.run("go", ctx=ctx))

    async def aresume(self, agent: Any, paused: Transcript, answer: Answer) -> Transcript:
        was: _Paused = paused.state
        ctx = Context.from_dict(agent, was.saved, serializer=JsonPickleSerializer())
        handler = agent.run(ctx=ctx)
        response = {k: v for k, v in asdict(answer).items() if v is not None}
        for asked in was.asked:
            handler.ctx.send_event(ApprovalDecision(request_id=asked.request_id, response=response))
        return await _until_paused(handler)


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
        guard = self.guard(engine, rules, strict, **options)
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
        agent = FunctionAgent(
            name="ops",
            description="Does the work.",
            tools=tools.functions(),
            llm=scripted([(c.tool, c.arguments) for c in script]),
        )
        return self.guard(engine, rules, strict, **options).apply(AgentWorkflow(agents=[agent]))
