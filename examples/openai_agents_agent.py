"""The helpdesk story (examples/helpdesk.py) through the OpenAI Agents SDK's real loop,
offline.

An ``Agent`` on the SDK's own ``ScriptedModel`` (no API key), guarded by
``ToolpassGuardrails``; the user comes from the run's context, the conversation from the
session callable. The deploy waits for a person in the SDK's own way: each guarded tool's
``needs_approval`` is toolpass's check, so the run ends with ``result.interruptions``
(``guardrails.pending(item)`` is toolpass's request); once a person has decided in the queue,
``state.approve(item)`` and ``Runner.run(agent, state)`` resume it, and toolpass checks the
call again, so the queue's record decides. (The SDK asks before the body runs, so the deploy
is a plain tool whose rule says it needs a person: ``Traits(approve=True)``.) Needs
``pip install ./core ./adapters/openai-agents`` (or, once published,
``pip install toolpass-openai-agents``).

    python examples/openai_agents_agent.py
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # no trace leaves for OpenAI

from agents import Agent, Runner, RunResult, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from helpdesk import CONVERSATION, HOOKED_RULES, HOOKED_TOOLS, USER, Script, engine, kit, main
from toolpass.openai_agents import ToolpassGuardrails

set_tracing_disabled(True)


@dataclass
class Ctx:
    user_id: str  # the application's user, never the model's


guardrails = ToolpassGuardrails(engine, HOOKED_RULES, toolkit=kit, session=lambda _: CONVERSATION)
#: The run that paused for a person (its agent, model and result), if one did.
paused: dict[str, Any] = {}


def run(script: Script) -> list[str]:
    """The first run; the second, once a person has decided, is the first one resumed."""
    if paused:  # the person decided in the queue; the interruption is approved and resumed
        agent, model, before = paused.pop("agent"), paused.pop("model"), paused.pop("read")
        state = paused.pop("result").to_state()
        for item in state.get_interruptions():
            state.approve(item)  # toolpass checks the call again: the queue's record decides
        result: RunResult = asyncio.run(Runner.run(agent, state))
    else:
        turns = [
            [function_call(name, args, call_id=f"call-{i}")]
            for i, (name, args) in enumerate(script)
        ]
        model = ScriptedModel([*turns, [assistant_message("done")]])
        agent = Agent(name="helpdesk", model=model, tools=[function_tool(t) for t in HOOKED_TOOLS])
        guardrails.apply(agent)
        before = 0
        result = asyncio.run(Runner.run(agent, "Tidy up PAY", context=Ctx(USER)))
    read = _read(model)
    if result.interruptions:
        paused.update(agent=agent, model=model, result=result, read=len(read))
        for item in result.interruptions:
            asked = guardrails.pending(item)
            assert asked is not None
            read.append(
                f"(the run pauses for a person: interruptions {asked['type']}, "
                f"request {asked['request_id']})"
            )
    else:
        assert result.final_output == "done"
    return read[before:]


def _read(model: ScriptedModel) -> list[str]:
    """What the model read back after each tool call, as it last saw the conversation."""
    last = model.last_call
    assert last is not None
    return [
        str(item["output"])
        for item in last.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


if __name__ == "__main__":
    main("OpenAI Agents SDK", run)
