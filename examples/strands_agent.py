"""The helpdesk story (examples/helpdesk.py) through Strands Agents' real loop, offline.

An ``Agent`` on a scripted model (a ``strands.models.model.Model`` streaming
Bedrock-Converse-style events; Strands ships no fake; no API key), guarded by the
``ToolpassAuthorization`` intervention; the user comes from the invocation state, the
conversation from the session callable. Needs ``pip install ./core ./adapters/strands`` (or,
once published, ``pip install toolpass-strands``).

    python examples/strands_agent.py
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from strands import Agent, tool
from strands.models.model import Model
from toolpass.strands import ToolpassAuthorization


class ScriptedModel(Model):
    """Makes the script's calls one per turn, then answers "done"."""

    def __init__(self, script: Script) -> None:
        self.script = script  # the next run's calls

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
        if made < len(self.script):
            name, arguments = self.script[made]
            start = {"toolUse": {"toolUseId": f"call-{made}", "name": name}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "done"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


guard = ToolpassAuthorization(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)
agent = Agent(
    model=ScriptedModel([]),
    tools=[tool(t) for t in TOOLS],
    interventions=[guard],
    callback_handler=None,  # print nothing of the stream
)
#: The approval interrupts of the run that stopped for a person, if it did.
waiting: list[Any] = []


def run(script: Script) -> list[str]:
    """The first run; the second, once a person has approved, is the first one resumed: a
    call waiting for approval stops a Strands run as an interrupt (``toolpass-approval``)."""
    before = len(tool_results())
    if waiting:  # the person's answer is in the queue already; the interrupt says go on
        [ask] = waiting
        waiting.clear()
        reply = [{"interruptResponse": {"interruptId": ask.id, "response": "y"}}]
        result = agent(reply, invocation_state={"user_id": USER})
    else:
        assert isinstance(agent.model, ScriptedModel)
        agent.model.script = script
        result = agent("Tidy up PAY", invocation_state={"user_id": USER})
    read = tool_results()[before:]
    if result.stop_reason == "interrupt":
        waiting.extend(i for i in result.interrupts if i.name.startswith("toolpass-approval"))
        ask = waiting[0]
        read.append(
            f"(the run stops for a person: interrupt {ask.name}, {ask.reason['request_id']})"
        )
    else:
        assert str(result).strip() == "done"
    return read


def tool_results() -> list[str]:
    """What the model read back after each call, in order."""
    return [
        " ".join(part["text"] for part in block["toolResult"]["content"])
        for message in agent.messages
        if message["role"] == "user"
        for block in message["content"]
        if "toolResult" in block
    ]


if __name__ == "__main__":
    main("Strands Agents", run)
