"""toolpass-pydantic-ai's added time per tool call, against the same agent run without it.

One agent run makes CALLS tool calls through Pydantic AI's real loop (a scripted
``FunctionModel``, no network). The same run is timed bare, with a capability that does
nothing (what Pydantic AI's capability machinery costs by itself), with ``ToolpassAuthorization``
(a tool with a rule, so the permission engine is asked, and one without), and with
``ToolpassToolset``; every variant in the same process, runs interleaved, medians over
runs, so the ratios hold on any machine. The audit sink is a list, so logging is not measured.

    python bench/bench_adapter_pydantic_ai.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from _shared import Engine, ainterleave, aper_call, table
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from toolpass import Toolkit
from toolpass.pydantic_ai import Rule, ToolpassAuthorization, ToolpassToolset

CALLS = 10  # tool calls per agent run
ROUNDS = 60  # agent runs per variant, interleaved; the median run is reported
HOOK_CALLS = 20_000  # calls of the hook alone per timing
USER = "dana@example.com"


@dataclass
class Deps:
    user: str


@dataclass
class Passthrough(AbstractCapability[Any]):
    """A capability whose tool hook only calls the handler."""

    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        return await handler(args)


def model(tool: str) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(isinstance(m, ModelResponse) for m in messages)
        if made < CALLS:
            return ModelResponse(parts=[ToolCallPart(tool, {"key": f"PAY-{made}"}, f"c{made}")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


async def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


async def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


def agents() -> dict[str, tuple[Agent[Deps, str], list[Any]]]:
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    built: dict[str, tuple[Agent[Deps, str], list[Any]]] = {}

    def add(name: str, tool: str, **options: Any) -> None:
        seen: list[Any] = []
        kit = Toolkit(audit=[seen.append])
        capabilities = options.pop("capabilities", None)
        toolsets = options.pop("toolsets", None)
        agent: Agent[Deps, str] = Agent(
            model(tool),
            deps_type=Deps,
            capabilities=capabilities(kit) if capabilities else None,
            toolsets=toolsets(kit) if toolsets else [FunctionToolset([delete_issue, close_issue])],
        )
        built[name] = (agent, seen)

    add("bare agent", "delete_issue")
    # What any capability with a tool hook costs in Pydantic AI itself, toolpass or not.
    add("no-op capability", "delete_issue", capabilities=lambda kit: [Passthrough()])
    add(
        "capability, rule",
        "delete_issue",
        capabilities=lambda kit: [ToolpassAuthorization(Engine(), rules, toolkit=kit)],
    )
    add(
        "capability, no rule",
        "close_issue",
        capabilities=lambda kit: [ToolpassAuthorization(Engine(), rules, toolkit=kit)],
    )
    add(
        "toolset, rule",
        "delete_issue",
        toolsets=lambda kit: [
            ToolpassToolset(
                FunctionToolset([delete_issue, close_issue]), Engine(), rules, toolkit=kit
            )
        ],
    )
    return built


async def timed(agent: Agent[Deps, str]) -> float:
    """Seconds per tool call in one agent run."""
    start = time.perf_counter()
    result = await agent.run("go", deps=Deps(USER))
    elapsed = time.perf_counter() - start
    assert result.output == "done"
    return elapsed / CALLS


async def main() -> None:
    built = agents()
    samples = await ainterleave(built, lambda name: timed(built[name][0]), ROUNDS, warmup=5)
    for name, (_, seen) in built.items():
        expected = 0 if name in ("bare agent", "no-op capability") else (ROUNDS + 5) * CALLS
        assert len(seen) == expected, (name, len(seen))  # every call was checked and audited
    title = f"toolpass-pydantic-ai: time per tool call in the real loop ({CALLS} calls per run)"
    table(title, samples, "bare agent")
    base = statistics.median(samples["bare agent"])
    hook, bare = await hook_alone()
    added = hook - bare
    print("the hook alone (wrap_tool_execute around a handler that returns at once)")
    print(f"  handler alone          {bare * 1e6:9.2f} µs")
    print(f"  through the capability {hook * 1e6:9.2f} µs  (+{added * 1e6:.2f} µs per call)")
    print(f"  => {(base + added) / base:.3f}x the bare agent's {base * 1e6:.0f} µs per tool call")


async def hook_alone() -> tuple[float, float]:
    """Median seconds per call of the hook with a rule (engine asked, audited), and of the
    handler it wraps: the loop's own noise does not enter this figure."""
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    seen: list[Any] = []
    cap = await ToolpassAuthorization(
        Engine(), rules, toolkit=Toolkit(audit=[seen.append])
    ).for_run(None)  # type: ignore[arg-type]
    assert isinstance(cap, ToolpassAuthorization)
    ctx: Any = SimpleNamespace(deps=Deps(USER), agent=None, root_capability=None)
    call = ToolCallPart("delete_issue", {"key": "PAY-1"}, "c")
    args = {"key": "PAY-1"}

    async def handler(arguments: dict[str, Any]) -> str:
        return "deleted"

    async def through() -> None:
        for _ in range(HOOK_CALLS):
            await cap.wrap_tool_execute(
                ctx,
                call=call,
                tool_def=None,
                args=args,
                handler=handler,  # type: ignore[arg-type]
            )

    async def alone() -> None:
        for _ in range(HOOK_CALLS):
            await handler(args)

    timings = await aper_call({"through": through, "alone": alone}, HOOK_CALLS)
    assert len(seen) == 7 * HOOK_CALLS
    return timings["through"], timings["alone"]


if __name__ == "__main__":
    asyncio.run(main())
