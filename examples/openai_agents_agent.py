"""The helpdesk story (examples/helpdesk.py) through the OpenAI Agents SDK's real loop,
offline.

An ``Agent`` on the SDK's own ``ScriptedModel`` (no API key), guarded by
``ToolpassGuardrails``; the user comes from the run's context, the conversation from the
session callable. Needs ``pip install ./core ./adapters/openai-agents`` (or, once published,
``pip install toolpass-openai-agents``).

    python examples/openai_agents_agent.py
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # no trace leaves for OpenAI

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from toolpass.openai_agents import ToolpassGuardrails

set_tracing_disabled(True)


@dataclass
class Ctx:
    user_id: str  # the application's user, never the model's


guardrails = ToolpassGuardrails(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)


def run(script: Script) -> list[str]:
    turns = [
        [function_call(name, args, call_id=f"call-{i}")] for i, (name, args) in enumerate(script)
    ]
    model = ScriptedModel([*turns, [assistant_message("done")]])
    agent = Agent(name="helpdesk", model=model, tools=[function_tool(t) for t in TOOLS])
    guardrails.apply(agent)
    result = asyncio.run(Runner.run(agent, "Tidy up PAY", context=Ctx(USER)))
    assert result.final_output == "done"
    last = model.last_call
    assert last is not None
    return [
        str(item["output"])
        for item in last.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


if __name__ == "__main__":
    main("OpenAI Agents SDK", run)
