"""toolpass-openai-agents' added time per tool call, against the same agent run without it.

One agent run makes CALLS tool calls through the Agents SDK's real loop (``Runner.run`` with
the SDK's ``ScriptedModel``, no network, tracing off). The same run is timed bare, guarded by
``ToolpassGuardrails.apply`` (a tool with a rule, so the permission engine is asked, and one
without), and with the guardrail alone on the tool (decision only, no session around the
body); every variant in the same process, runs interleaved in rounds. The added time is the
median over rounds of each round's difference to the bare run (paired, so load on the machine
that drifts between rounds cancels out). The audit sink is a list, so logging is not measured.

    python bench/bench_adapter_openai_agents.py
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from _shared import Engine, ainterleave, table
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from toolpass import Toolkit
from toolpass.openai_agents import Rule, ToolpassGuardrails

set_tracing_disabled(True)
CALLS = 10  # tool calls per agent run
ROUNDS = 100  # agent runs per variant, interleaved in rounds; medians are reported
USER = "dana@example.com"


@dataclass
class Ctx:
    user_id: str


def script(tool: str) -> list[Any]:
    steps: list[Any] = [
        [function_call(tool, {"key": f"PAY-{i}"}, call_id=f"c{i}")] for i in range(CALLS)
    ]
    return [*steps, [assistant_message("done")]]


async def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


async def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


def agents() -> dict[str, tuple[Agent[Ctx], str, list[Any]]]:
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    built: dict[str, tuple[Agent[Ctx], str, list[Any]]] = {}

    def add(name: str, tool: str, how: str | None) -> None:
        seen: list[Any] = []
        tools = [function_tool(delete_issue), function_tool(close_issue)]
        agent: Agent[Ctx] = Agent(name="bench", tools=list(tools))
        guardrails = ToolpassGuardrails(Engine(), rules, toolkit=Toolkit(audit=[seen.append]))
        if how == "apply":
            guardrails.apply(agent)
        elif how == "guardrail":
            for t in tools:
                t.tool_input_guardrails = [guardrails.guardrail]
        built[name] = (agent, tool, seen)

    add("bare agent", "delete_issue", None)
    add("apply, rule", "delete_issue", "apply")
    add("apply, no rule", "close_issue", "apply")
    add("guardrail only, rule", "delete_issue", "guardrail")
    return built


async def timed(agent: Agent[Ctx], tool: str) -> float:
    """Seconds per tool call in one agent run."""
    agent.model = ScriptedModel(script(tool))  # a script is used up by its run
    start = time.perf_counter()
    result = await Runner.run(agent, "go", context=Ctx(USER), max_turns=CALLS + 2)
    elapsed = time.perf_counter() - start
    assert result.final_output == "done"
    return elapsed / CALLS


async def main() -> None:
    built = agents()
    samples = await ainterleave(built, lambda name: timed(*built[name][:2]), ROUNDS, warmup=5)
    for name, (_, _, seen) in built.items():
        expected = 0 if name == "bare agent" else (ROUNDS + 5) * CALLS
        assert len(seen) == expected, (name, len(seen))  # every call was checked and audited
    title = f"toolpass-openai-agents: time per tool call ({CALLS} calls per run, medians)"
    table(title, samples, "bare agent", paired=True)


if __name__ == "__main__":
    asyncio.run(main())
