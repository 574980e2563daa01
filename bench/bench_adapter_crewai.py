"""toolpass-crewai's added time per tool call, against the same crew run without it.

One kickoff makes CALLS tool calls through CrewAI's real crew loop (a scripted ``BaseLLM``,
native tool calling, no network). The same kickoff is timed bare, with a CrewAI hook that does
nothing (what CrewAI's hook dispatch costs by itself), and inside ``ToolpassHooks`` (a tool with
a rule, so the permission engine is asked, and one without); every variant in the same
process, runs interleaved, medians over runs, so the ratios hold on any machine. The audit sink
is a list, so logging is not measured. Then the hooks alone: CrewAI's own pre- and post-call
dispatch around one call, with and without toolpass.

    python bench/bench_adapter_crewai.py
"""

from __future__ import annotations

import json
import os
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_DISABLE_VERSION_CHECK"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "true"

from _shared import Engine, interleave, per_call, table

with warnings.catch_warnings():  # CrewAI 1.15's own import warns (crewai.rag.embeddings)
    warnings.simplefilter("ignore")
    from crewai import Agent, Crew, Task
    from crewai.hooks.contexts import InputContext
    from crewai.hooks.dispatch import InterceptionPoint, dispatch, register, unregister
    from crewai.hooks.tool_hooks import (
        ToolCallHookContext,
        run_after_tool_call_hooks,
        run_before_tool_call_hooks,
    )
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import BaseTool, tool
    from toolpass import Toolkit
    from toolpass.crewai import Rule, ToolpassHooks

CALLS = 10  # tool calls per kickoff
ROUNDS = 40  # kickoffs per variant, interleaved; the median run is reported
HOOK_CALLS = 5_000  # calls of the hooks alone per timing
USER = "dana@example.com"


class Scripted(BaseLLM):
    tool_name: str = "delete_issue"

    def call(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        made = sum(1 for m in messages if m.get("role") == "tool")
        if made < CALLS:
            arguments = json.dumps({"key": f"PAY-{made}"})
            call = {"name": self.tool_name, "arguments": arguments}
            return [{"id": f"c{made}", "type": "function", "function": call}]
        return "done"

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def get_input_tokens_count(self, messages: Any, tools: Any = None, **_: Any) -> int:
        return 1


@tool
def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


@tool
def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


def build(tool_name: str) -> Crew:
    llm = Scripted(model="scripted", tool_name=tool_name)
    tools: list[BaseTool] = [delete_issue, close_issue]
    agent = Agent(role="Assistant", goal="Help", backstory="Scripted", llm=llm, tools=tools)
    task = Task(description="Clean up the issues.", expected_output="done", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def noop(ctx: Any) -> None:
    return None


@contextmanager
def noop_hook() -> Iterator[None]:
    """A CrewAI hook that does nothing: what any tool hook costs in CrewAI itself."""
    register(InterceptionPoint.PRE_TOOL_CALL, noop)
    register(InterceptionPoint.POST_TOOL_CALL, noop)
    try:
        yield
    finally:
        unregister(InterceptionPoint.PRE_TOOL_CALL, noop)
        unregister(InterceptionPoint.POST_TOOL_CALL, noop)


RULES = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}


def variants() -> dict[str, tuple[Crew, Callable[[], Any], list[Any]]]:
    built: dict[str, tuple[Crew, Callable[[], Any], list[Any]]] = {}
    for name, tool_name, guarded in (
        ("bare crew", "delete_issue", None),
        ("no-op CrewAI hook", "delete_issue", "noop"),
        ("toolpass, rule", "delete_issue", "toolpass"),
        ("toolpass, no rule", "close_issue", "toolpass"),
    ):
        seen: list[Any] = []
        hooks = ToolpassHooks(Engine(), RULES, toolkit=Toolkit(audit=[seen.append]))
        scope: Callable[[], Any] = (
            hooks.active if guarded == "toolpass" else noop_hook if guarded else nullcontext
        )
        built[name] = (build(tool_name), scope, seen)
    return built


def timed(crew: Crew, scope: Callable[[], Any]) -> float:
    """Seconds per tool call in one kickoff."""
    start = time.perf_counter()
    with scope():
        result = crew.kickoff(inputs={"user_id": USER})
    elapsed = time.perf_counter() - start
    assert result.raw == "done"
    return elapsed / CALLS


def hooks_alone() -> tuple[float, float, float]:
    """Median seconds per call of CrewAI's pre- and post-call dispatch with toolpass (the
    engine asked, the tool run, audited), with a no-op hook plus the tool's run, and of the
    tool's run alone: the loop's own noise does not enter these figures."""
    seen: list[Any] = []
    hooks = ToolpassHooks(Engine(), RULES, toolkit=Toolkit(audit=[seen.append]))
    structured = delete_issue.to_structured_tool()
    arguments = {"key": "PAY-1"}

    def one_call() -> None:
        before = ToolCallHookContext("delete_issue", arguments, structured)
        if not run_before_tool_call_hooks(before):
            delete_issue.run(**arguments)
        after = ToolCallHookContext("delete_issue", arguments, structured, tool_result="x")
        run_after_tool_call_hooks(after)

    def through() -> None:
        with hooks.active():
            inputs = {"user_id": USER}
            dispatch(InterceptionPoint.INPUT, InputContext(inputs=inputs, payload=inputs))
            for _ in range(HOOK_CALLS):
                one_call()

    def noop_only() -> None:
        with noop_hook():
            for _ in range(HOOK_CALLS):
                one_call()

    def alone() -> None:
        for _ in range(HOOK_CALLS):
            delete_issue.run(**arguments)

    timings = per_call({"through": through, "noop": noop_only, "alone": alone}, HOOK_CALLS)
    assert len(seen) == 7 * HOOK_CALLS
    return timings["through"], timings["noop"], timings["alone"]


def main() -> None:
    built = variants()
    samples = interleave(built, lambda name: timed(*built[name][:2]), ROUNDS, warmup=3)
    for name, (_, _, seen) in built.items():
        expected = (ROUNDS + 3) * CALLS if name.startswith("toolpass") else 0
        assert len(seen) == expected, (name, len(seen))  # every call was checked and audited
    title = f"toolpass-crewai: time per tool call in the real crew loop ({CALLS} calls per kickoff)"
    table(title, samples, "bare crew")
    base = statistics.median(samples["bare crew"])
    through, noop_call, alone = hooks_alone()
    added = through - noop_call
    print("the hooks alone (CrewAI's pre- and post-call dispatch around one call of the tool)")
    print(f"  the tool's run alone      {alone * 1e6:9.2f} µs")
    print(f"  no-op hook + the tool     {noop_call * 1e6:9.2f} µs")
    print(f"  toolpass (rule, audited)  {through * 1e6:9.2f} µs  (+{added * 1e6:.2f} µs per call)")
    print(f"  => {(base + added) / base:.3f}x the bare crew's {base * 1e6:.0f} µs per tool call")


if __name__ == "__main__":
    main()
