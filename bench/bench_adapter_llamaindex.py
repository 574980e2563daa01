"""toolpass-llamaindex's added time per tool call, against the same agent run without it.

One ``FunctionAgent`` run makes CALLS tool calls through LlamaIndex's real loop (a scripted
``MockFunctionCallingLLM``, no network; the user in the workflow context's store). The same
run is timed bare, with a ``_call_tool`` that only calls the original (what any hook at the
agent's tool-call step costs by itself), with ``guard.apply`` (a tool with a rule, so the
permission engine is asked, and one without) and with the tools wrapped (``guard.wrap``);
every variant in the same process, runs interleaved, medians over runs, so the ratios hold on
any machine. The audit sink is a list, so logging is not measured.

LlamaIndex's loop takes milliseconds per tool call, so the adapter's cost is within the noise
of those runs; the hook alone (the guarded ``_call_tool`` against the original, around the
same tool, HOOK_CALLS times) gives the added time itself, and the ratio it makes.

    python bench/bench_adapter_llamaindex.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from _shared import Engine, ainterleave, aper_call, table
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context
from toolpass import Toolkit
from toolpass.llamaindex import Rule, ToolpassAuthorization

CALLS = 10  # tool calls per agent run
ROUNDS = 40  # agent runs per variant, interleaved; the median run is reported
USER = "dana@example.com"
HOOK_CALLS = 5_000  # calls of the hook alone per timing

warnings.filterwarnings("ignore", module="inspect")  # LlamaIndex's own, as it builds an agent


def model(tool: str) -> MockFunctionCallingLLM:
    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        made = sum(m.role == MessageRole.TOOL for m in messages)
        if made < CALLS:
            call = ToolCallBlock(
                tool_call_id=f"c{made}", tool_name=tool, tool_kwargs={"key": f"PAY-{made}"}
            )
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="done")

    return MockFunctionCallingLLM(response_generator=respond)


async def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


async def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


def passthrough(agent: FunctionAgent) -> FunctionAgent:
    """A ``_call_tool`` that only calls the original: what any hook there costs."""
    original = agent._call_tool

    async def _call_tool(ctx: Any, tool: Any, tool_input: Any) -> Any:
        return await original(ctx, tool, tool_input)

    object.__setattr__(agent, "_call_tool", _call_tool)
    return agent


def agents() -> dict[str, tuple[FunctionAgent, list[Any]]]:
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    tools = [delete_issue, close_issue]
    built: dict[str, tuple[FunctionAgent, list[Any]]] = {}

    def guard(seen: list[Any]) -> ToolpassAuthorization:
        return ToolpassAuthorization(Engine(), rules, toolkit=Toolkit(audit=[seen.append]))

    def add(name: str, tool: str, how: str) -> None:
        seen: list[Any] = []
        given: list[Any] = guard(seen).wrap(tools) if how == "wrap" else list(tools)
        agent = FunctionAgent(tools=given, llm=model(tool), streaming=False)
        if how == "apply":
            agent = guard(seen).apply(agent)
        elif how == "passthrough":
            agent = passthrough(agent)
        built[name] = (agent, seen)

    add("bare agent", "delete_issue", "bare")
    add("pass-through hook", "delete_issue", "passthrough")
    add("apply, rule", "delete_issue", "apply")
    add("apply, no rule", "close_issue", "apply")
    add("wrap, rule", "delete_issue", "wrap")
    return built


async def timed(agent: FunctionAgent) -> float:
    """Seconds per tool call in one agent run."""
    ctx: Context[Any] = Context(agent)
    await ctx.store.set("user_id", USER)
    start = time.perf_counter()
    result = await agent.run("go", ctx=ctx)
    elapsed = time.perf_counter() - start
    assert str(result) == "done", result
    return elapsed / CALLS


async def main() -> None:
    built = agents()
    samples = await ainterleave(built, lambda name: timed(built[name][0]), ROUNDS, warmup=3)
    for name, (_, seen) in built.items():
        guarded = name not in ("bare agent", "pass-through hook")
        expected = (ROUNDS + 3) * CALLS if guarded else 0
        assert len(seen) == expected, (name, len(seen))  # every call was checked and audited
    title = f"toolpass-llamaindex: time per tool call in the real loop ({CALLS} calls per run)"
    table(title, samples, "bare agent")
    base = statistics.median(samples["bare agent"])
    hook, bare = await hook_alone()
    added = hook - bare
    print("the hook alone (the agent's _call_tool, guarded, around an async tool)")
    print(f"  original _call_tool    {bare * 1e6:9.2f} µs")
    print(f"  guarded (apply, rule)  {hook * 1e6:9.2f} µs  (+{added * 1e6:.2f} µs per call)")
    print(f"  => {(base + added) / base:.3f}x the bare agent's {base * 1e6:.0f} µs per tool call")


class Store:
    """What the hook reads of a workflow context's store (``get``, ``edit_state``), in a
    dict: the step machinery around it is what the agent runs above measure."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    async def get(self, path: str, default: Any = None) -> Any:
        return self.values.get(path, default)

    @asynccontextmanager
    async def edit_state(self) -> AsyncIterator[dict[str, Any]]:
        yield self.values


class Ctx:
    def __init__(self) -> None:
        self.store = Store({"user_id": USER})


async def hook_alone() -> tuple[float, float]:
    """Median seconds per call of the guarded ``_call_tool`` (rule, engine asked, audited),
    and of the original around the same tool: the loop's own noise does not enter this."""
    seen: list[Any] = []
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    guard = ToolpassAuthorization(Engine(), rules, toolkit=Toolkit(audit=[seen.append]))
    agent = FunctionAgent(tools=[delete_issue], llm=model("delete_issue"))
    original = agent._call_tool
    guard.apply(agent)
    hooked = agent._call_tool
    [tool] = await agent.get_tools()
    ctx: Any = Ctx()
    arguments = {"key": "PAY-1"}

    async def through() -> None:
        for _ in range(HOOK_CALLS):
            out = await hooked(ctx, tool, arguments)
        assert out.content == "deleted PAY-1", out

    async def alone() -> None:
        for _ in range(HOOK_CALLS):
            await original(ctx, tool, arguments)

    timings = await aper_call({"through": through, "alone": alone}, HOOK_CALLS)
    assert len(seen) == 7 * HOOK_CALLS
    return timings["through"], timings["alone"]


if __name__ == "__main__":
    asyncio.run(main())
