"""The helpdesk story (examples/helpdesk.py) through CrewAI's real crew loop, offline.

A ``Crew`` whose agent runs on a scripted ``BaseLLM`` (CrewAI ships no fake model; no API
key), guarded by ``ToolpassHooks`` around the kickoff; the user comes from the kickoff's
inputs, the conversation from the session callable. CrewAI has no tool-level pause, so the
deploy's hook waits for the person (``approval_timeout=``, a bounded ``queue.wait``), who
decides from another thread (a notifier told them); the check then runs again and the call
runs once. (The hook checks before the body, so the deploy is a plain tool whose rule says
it needs a person: ``Traits(approve=True)``.) Needs
``pip install ./core ./adapters/crewai`` (or, once published, ``pip install toolpass-crewai``).

    python examples/crewai_agent.py
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # nothing leaves for CrewAI's telemetry
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_DISABLE_VERSION_CHECK"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "true"

with warnings.catch_warnings():  # CrewAI's own import warns
    warnings.simplefilter("ignore")
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import tool
    from helpdesk import (
        CONVERSATION,
        HOOKED_RULES,
        HOOKED_TOOLS,
        USER,
        Script,
        engine,
        kit,
        main,
    )
    from toolpass.crewai import ToolpassHooks

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"crewai\..*")


class ScriptedLLM(BaseLLM):
    """Makes the script's calls one per turn, then answers "done"; keeps what it read."""

    script: list[Any] = []  # noqa: RUF012 (pydantic fields: copied per instance)
    read: list[str] = []  # noqa: RUF012

    def call(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.read = [str(m["content"]) for m in messages if m.get("role") == "tool"]
        if len(self.read) < len(self.script):
            name, arguments = self.script[len(self.read)]
            call = {"name": name, "arguments": json.dumps(arguments)}
            return [{"id": f"call-{len(self.read)}", "type": "function", "function": call}]
        return "done"

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def get_input_tokens_count(self, messages: Any, tools: Any = None, **_: Any) -> int:
        return 1


def run(script: Script) -> list[str]:
    llm = ScriptedLLM(model="scripted", script=script)
    agent = Agent(
        role="Helpdesk",
        goal="Tidy up PAY",
        backstory="Scripted",
        llm=llm,
        tools=[tool(t) for t in HOOKED_TOOLS],
    )
    task = Task(description="Tidy up PAY", expected_output="done", agent=agent)
    crew = Crew(agents=[agent], tasks=[task])
    hooks = ToolpassHooks(
        engine, HOOKED_RULES, toolkit=kit, session=lambda _: CONVERSATION, approval_timeout=60
    )
    with hooks:
        result = crew.kickoff(inputs={"user_id": USER})
    assert result.raw == "done"
    return llm.read


if __name__ == "__main__":
    main("CrewAI", run, waits=True)
