"""The shared conformance suite through Google ADK's real loop (``Runner.run``, which runs
the agent on a thread of its own, and ``Runner.run_async``) with a scripted ``BaseLlm``:
guarded by ``ToolpassCallbacks.apply`` on the agent, and by its plugin on the ``App``.

Approvals pause natively: the run stops with ADK's ``adk_request_confirmation`` call, and
is resumed with the person's ``ToolConfirmation`` by a runner built anew on the same
session service (as after a restart)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adk_script import agent_with, arun, final, read_back, run, runner_for
from google.adk.runners import Runner
from google.genai import types
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.adapting import Answer
from toolpass.google_adk import ToolpassCallbacks


@dataclass
class _Paused:
    runner: Runner
    user: str
    session: str
    asks: list[types.FunctionCall]


def _transcript(runner: Runner, user: str, events: list[Any], session: str) -> Transcript:
    asks = [
        c for e in events for c in e.get_function_calls() if c.name == "adk_request_confirmation"
    ]
    pending = [(c.args or {})["toolConfirmation"]["payload"] for c in asks]
    out = Transcript(read_back(events), final(events), pending=pending)
    out.state = _Paused(runner, user, session, asks)
    return out


def _reply(paused: _Paused, answer: Answer) -> types.Content:
    """The person's answer as ADK takes it: a ``ToolConfirmation`` for each confirmation."""
    confirmed = answer.decision in ("approve", "edit")
    payload = {
        "decision": answer.decision,
        "by": answer.by,
        "reason": answer.reason,
        "arguments": None if answer.arguments is None else dict(answer.arguments),
        "request_id": answer.request_id,
    }
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                name="adk_request_confirmation",
                id=ask.id,
                response={"confirmed": confirmed, "payload": payload},
            )
        )
        for ask in paused.asks
    ]
    return types.Content(role="user", parts=parts)


def _resumed(agent: Runner, paused: _Paused) -> Runner:
    """The runner built anew, on the paused run's session service (a restart keeps it)."""
    return Runner(app=agent.app, session_service=paused.runner.session_service)


class TestApply(AdapterConformance):
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
    ) -> Runner:
        callbacks = ToolpassCallbacks(engine, rules, strict=strict, **options)
        agent = agent_with(tools.functions(), [(c.tool, c.arguments) for c in script])
        return runner_for(callbacks.apply(agent))

    def run(self, agent: Runner, user: str | None) -> Transcript:
        events, session = run(agent, user or "")
        return _transcript(agent, user or "", events, session)

    async def arun(self, agent: Runner, user: str | None) -> Transcript:
        events, session = await arun(agent, user or "")
        return _transcript(agent, user or "", events, session)

    def resume(self, agent: Runner, paused: Transcript, answer: Answer) -> Transcript:
        was: _Paused = paused.state
        runner = _resumed(agent, was)
        events, _ = run(runner, was.user, was.session, _reply(was, answer))
        return _transcript(runner, was.user, events, was.session)

    async def aresume(self, agent: Runner, paused: Transcript, answer: Answer) -> Transcript:
        was: _Paused = paused.state
        runner = _resumed(agent, was)
        events, _ = await arun(runner, was.user, was.session, _reply(was, answer))
        return _transcript(runner, was.user, events, was.session)


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
