"""ToolpassMiddleware's added time per tool call on LangChain's real agent loop.

The same ``create_agent`` run (a scripted model making 10 tool calls, one per turn, then
answering) with and without the middleware, sync and async, measured in this run: medians
of CPU time over interleaved repeats, so the ratios hold on any machine. "pass-through mw" is
a middleware that only calls the tool: what any tool middleware costs in LangChain.

    python bench/bench_adapter_langchain.py
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from pytest_toolpass import ScriptedEngine
from toolpass import Decision, Toolkit
from toolpass.adapting import Rule
from toolpass.langchain import ToolpassMiddleware

for _name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
    os.environ[_name] = "false"

USER = "dana@example.com"
CALLS = 10  # tool calls per run
REPEATS = 61  # runs per variant, interleaved
WARMUP = 5


class ScriptedChat(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


@dataclass
class Context:
    user_id: str


def read_issue(key: str) -> str:
    """Read an issue."""
    return f"issue {key}: open"


class PassThrough(AgentMiddleware[Any, Any, Any]):
    """A middleware that only calls the tool: what any tool middleware costs in LangChain."""

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return await handler(request)


def agent(guard: AgentMiddleware[Any, Any, Any] | None) -> Any:
    turns: list[AIMessage | str] = [
        AIMessage(
            "", tool_calls=[{"name": "read_issue", "args": {"key": f"PAY-{i}"}, "id": f"c{i}"}]
        )
        for i in range(CALLS)
    ]
    turns.append("done")
    return create_agent(
        ScriptedChat(messages=itertools.cycle(turns)),  # each run takes exactly one cycle
        tools=[read_issue],
        middleware=[guard] if guard else [],
        context_schema=Context,
    )


def measure(runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    """Median CPU seconds per run of each (all threads of this process: LangGraph runs sync
    tools in a pool), the variants interleaved so drift hits all alike. CPU time, not wall
    time, so other processes on the machine do not count."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(WARMUP + REPEATS):
        for name, run in runs.items():
            start = time.process_time()
            run()
            if i >= WARMUP:
                times[name].append(time.process_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    allow: dict[tuple[str, str, str], Any] = {
        (USER, "READ_ISSUES", f"issue:PAY-{i}"): Decision.allow() for i in range(CALLS)
    }
    kit = Toolkit(audit=[lambda event: None])  # audited, to a sink that costs nothing
    agents = {
        "without toolpass": agent(None),
        "pass-through mw": agent(PassThrough()),
        "middleware, no rule": agent(ToolpassMiddleware(ScriptedEngine(), toolkit=kit)),
        "middleware, a rule": agent(
            ToolpassMiddleware(
                ScriptedEngine(allow),
                {"read_issue": Rule("jira", "READ_ISSUES", "issue:{key}")},
                toolkit=kit,
            )
        ),
    }
    go = {"messages": [HumanMessage("go")]}
    loop = asyncio.new_event_loop()

    def sync(graph: Any) -> Callable[[], None]:
        return lambda: check(graph.invoke(go, context=Context(USER)))

    def async_(graph: Any) -> Callable[[], None]:
        return lambda: check(loop.run_until_complete(graph.ainvoke(go, context=Context(USER))))

    print(
        f"ToolpassMiddleware on create_agent: {CALLS} tool calls per run, "
        f"median CPU time of {REPEATS} runs"
    )
    print(f"  {'run':<8}{'variant':<22}{'ms/run':>9}{'µs added/call':>16}{'ratio':>8}")
    try:
        for label, how in (("invoke", sync), ("ainvoke", async_)):
            medians = measure({name: how(graph) for name, graph in agents.items()})
            base = medians["without toolpass"]
            for name, t in medians.items():
                added = (t - base) / CALLS * 1e6
                print(f"  {label:<8}{name:<22}{t * 1e3:9.2f}{added:16.1f}{t / base:8.3f}")
    finally:
        loop.close()


def check(state: dict[str, Any]) -> None:
    messages = state["messages"]
    assert messages[-1].content == "done", messages[-1]
    assert sum(1 for m in messages if m.type == "tool" and m.status == "success") == CALLS


if __name__ == "__main__":
    main()
