"""toolpass-google-adk's added time per tool call, against the same agent run without it.

One run makes CALLS tool calls through Google ADK's real loop (``Runner.run_async`` with a
scripted ``BaseLlm``, no network). The same run is timed bare, with a plugin whose
``before_tool_callback`` does nothing (what ADK's plugin machinery costs by itself), with
``ToolpassCallbacks.apply`` (a tool with a rule, so the permission engine is asked, and one
without) and with its plugin; every variant in the same process, runs interleaved, medians over
runs, so the ratios hold on any machine. The audit sink is a list, so logging is not measured.

    python bench/bench_adapter_google_adk.py
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import time
from collections.abc import AsyncGenerator
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from _shared import Engine, ainterleave, aper_call, table
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from toolpass import Toolkit
from toolpass.google_adk import Rule, ToolpassCallbacks

CALLS = 10  # tool calls per agent run
ROUNDS = 20  # agent runs per variant, interleaved; the median run is reported
HOOK_CALLS = 5_000  # calls of the wrapped tool alone per timing
USER = "dana@example.com"

logging.getLogger("google_adk").setLevel(logging.ERROR)  # token-usage notes per model turn


class Scripted(BaseLlm):
    """CALLS calls of ``tool``, one per turn, then "done"."""

    model: str = "scripted"
    tool: str = "delete_issue"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        made = sum(1 for c in llm_request.contents for p in c.parts or () if p.function_response)
        if made < CALLS:
            call = types.FunctionCall(name=self.tool, args={"key": f"PAY-{made}"}, id=f"c{made}")
            part = types.Part(function_call=call)
        else:
            part = types.Part(text="done")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


class Passthrough(BasePlugin):
    """A plugin whose tool hook answers nothing."""

    async def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> None:
        return None


async def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


async def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


def runners() -> dict[str, tuple[Runner, list[Any]]]:
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    built: dict[str, tuple[Runner, list[Any]]] = {}

    def add(name: str, tool: str, how: str = "") -> None:
        seen: list[Any] = []
        agent = LlmAgent(name="ops", model=Scripted(tool=tool), tools=[delete_issue, close_issue])
        callbacks = ToolpassCallbacks(Engine(), rules, toolkit=Toolkit(audit=[seen.append]))
        plugins: list[BasePlugin] = []
        if how == "apply":
            callbacks.apply(agent)
        elif how == "plugin":
            plugins.append(callbacks.plugin())
        elif how == "no-op":
            plugins.append(Passthrough(name="noop"))
        app = App(name="bench", root_agent=agent, plugins=plugins)
        built[name] = (Runner(app=app, session_service=InMemorySessionService()), seen)

    add("bare agent", "delete_issue")
    add("no-op plugin", "delete_issue", "no-op")
    add("apply, rule", "delete_issue", "apply")
    add("apply, no rule", "close_issue", "apply")
    add("plugin, rule", "delete_issue", "plugin")
    return built


async def timed(runner: Runner) -> float:
    """Seconds per tool call in one agent run (a new ADK session each)."""
    session = await runner.session_service.create_session(app_name="bench", user_id=USER)
    message = types.Content(role="user", parts=[types.Part(text="go")])
    start = time.perf_counter()
    events = [
        e async for e in runner.run_async(user_id=USER, session_id=session.id, new_message=message)
    ]
    elapsed = time.perf_counter() - start
    assert events[-1].content is not None
    assert events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "done"
    return elapsed / CALLS


async def main() -> None:
    built = runners()
    samples = await ainterleave(built, lambda name: timed(built[name][0]), ROUNDS, warmup=3)
    for name, (_, seen) in built.items():
        expected = 0 if name in ("bare agent", "no-op plugin") else (ROUNDS + 3) * CALLS
        assert len(seen) == expected, (name, len(seen))  # every call was checked and audited
    title = f"toolpass-google-adk: time per tool call in the real loop ({CALLS} calls per run)"
    table(title, samples, "bare agent")
    base = statistics.median(samples["bare agent"])
    through, alone = await hook_alone()
    added = through - alone
    print("the wrapped tool alone (its run_async with a rule, around ADK's FunctionTool)")
    print(f"  FunctionTool alone     {alone * 1e6:9.2f} µs")
    print(f"  through toolpass       {through * 1e6:9.2f} µs  (+{added * 1e6:.2f} µs per call)")
    print(f"  => {(base + added) / base:.3f}x the bare agent's {base * 1e6:.0f} µs per tool call")


async def hook_alone() -> tuple[float, float]:
    """Median seconds per call of a guarded tool (engine asked, session, audit) and of the
    ``FunctionTool`` it wraps, with the ``ToolContext`` of a real call: the loop's own noise
    does not enter this figure."""
    captured: list[Any] = []

    async def capture(tool: Any, args: Any, tool_context: Any) -> None:
        captured.append(tool_context)

    seen: list[Any] = []
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    callbacks = ToolpassCallbacks(Engine(), rules, toolkit=Toolkit(audit=[seen.append]))
    agent = LlmAgent(
        name="ops", model=Scripted(), tools=[delete_issue], before_tool_callback=capture
    )
    callbacks.apply(agent)
    await timed(
        Runner(app=App(name="bench", root_agent=agent), session_service=InMemorySessionService())
    )
    guarded = agent.tools[0]
    inner = guarded.inner  # type: ignore[union-attr]
    context, args = captured[0], {"key": "PAY-1"}

    async def through() -> None:
        for _ in range(HOOK_CALLS):
            await guarded.run_async(args=args, tool_context=context)  # type: ignore[union-attr]

    async def alone() -> None:
        for _ in range(HOOK_CALLS):
            await inner.run_async(args=args, tool_context=context)

    timings = await aper_call({"through": through, "alone": alone}, HOOK_CALLS)
    return timings["through"], timings["alone"]


if __name__ == "__main__":
    asyncio.run(main())
