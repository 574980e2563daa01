"""toolpass-strands' added time per tool call, against the same agent run without it.

One agent run makes CALLS tool calls through Strands' real loop (``Agent.invoke_async`` with a
scripted ``Model`` streaming Bedrock-Converse-style events, no network, telemetry off). The
same run is timed bare, with an intervention handler that only proceeds (what Strands'
intervention machinery costs by itself), and with ``ToolpassAuthorization`` (a tool with a
rule, so the permission engine is asked, and one without); every variant in the same
process, runs interleaved in shuffled rounds, each on an agent made anew (outside the timing:
a Strands agent keeps its conversation). The added time is the median over rounds of each
round's difference to the bare run (paired, so load that drifts between rounds cancels out).
The audit sink is a list, so logging is not measured.

    python bench/bench_adapter_strands.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from _shared import Engine, ainterleave, table
from strands import Agent, tool
from strands.interventions import InterventionHandler, Proceed
from strands.models.model import Model
from toolpass import Toolkit
from toolpass.strands import Rule, ToolpassAuthorization

CALLS = 10  # tool calls per agent run
ROUNDS = 60  # agent runs per variant, interleaved in rounds; medians are reported
USER = "dana@example.com"


class Scripted(Model):
    """Calls ``tool`` CALLS times, one call per response, then answers "done"."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        made = sum(m["role"] == "assistant" for m in messages)
        yield {"messageStart": {"role": "assistant"}}
        if made < CALLS:
            start = {"toolUse": {"toolUseId": f"c{made}", "name": self.tool}}
            yield {"contentBlockStart": {"start": start}}
            arguments = json.dumps({"key": f"PAY-{made}"})
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "done"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


class Passthrough(InterventionHandler):
    """An intervention whose tool hook only proceeds."""

    name = "passthrough"

    def before_tool_call(self, event: Any, **kwargs: Any) -> Proceed:
        return Proceed()


@tool
async def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


@tool
async def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


Variant = tuple[Callable[[], Agent], list[Any]]


def variants() -> dict[str, Variant]:
    rules = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    built: dict[str, Variant] = {}

    def add(name: str, tool: str, handlers: Callable[[Toolkit], list[Any]]) -> None:
        seen: list[Any] = []
        kit = Toolkit(audit=[seen.append])

        def make() -> Agent:
            return Agent(
                model=Scripted(tool),
                tools=[delete_issue, close_issue],
                interventions=handlers(kit),
                callback_handler=None,
            )

        built[name] = (make, seen)

    add("bare agent", "delete_issue", lambda kit: [])
    # What any intervention with a tool hook costs in Strands itself, toolpass or not.
    add("no-op intervention", "delete_issue", lambda kit: [Passthrough()])
    add(
        "toolpass, rule",
        "delete_issue",
        lambda kit: [ToolpassAuthorization(Engine(), rules, toolkit=kit)],
    )
    add(
        "toolpass, no rule",
        "close_issue",
        lambda kit: [ToolpassAuthorization(Engine(), rules, toolkit=kit)],
    )
    return built


async def timed(make: Callable[[], Agent]) -> float:
    """Seconds per tool call in one agent run."""
    agent = make()
    start = time.perf_counter()
    result = await agent.invoke_async("go", invocation_state={"user_id": USER})
    elapsed = time.perf_counter() - start
    assert str(result).strip() == "done"
    return elapsed / CALLS


async def main() -> None:
    built = variants()
    samples = await ainterleave(built, lambda name: timed(built[name][0]), ROUNDS, warmup=5)
    for name, (_, seen) in built.items():
        toolpass = name.startswith("toolpass")
        expected = (ROUNDS + 5) * CALLS if toolpass else 0
        assert len(seen) == expected, (name, len(seen))  # every call checked, audited once
        assert all(e.outcome == "ok" for e in seen)
    title = (
        f"toolpass-strands: time per tool call in the real loop ({CALLS} calls per run, medians)"
    )
    table(title, samples, "bare agent", paired=True)


if __name__ == "__main__":
    asyncio.run(main())
