"""The shared scenario through CrewAI's real crew loop: a scripted ``BaseLLM`` (CrewAI has no
fake LLM of its own) calls ``propose_fix`` (a tool that declares nothing) once, for a user who
may not open the pull request and for one who may, with ``kickoff``, ``kickoff_async`` and
``akickoff``, guarded by ``ToolpassHooks`` around the kickoff.

No rule is needed: the request hook checks what the tool does. The tool runs inside the hook,
through toolpass's pipeline, so the request hook is active in its body; the refusal raised
there reaches the model as the tool's result instead of CrewAI's fixed "blocked" text.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from typing import Any

import pytest
from scenario import ARGUMENTS, MAY, MAY_NOT, Scenario

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_DISABLE_VERSION_CHECK"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "true"

with warnings.catch_warnings():  # CrewAI 1.15's own import warns (crewai.rag.embeddings)
    warnings.filterwarnings("ignore", category=ImportWarning)
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import tool
    from toolpass.crewai import ToolpassHooks

# CrewAI reads its own deprecated fields in every kickoff.
pytestmark = pytest.mark.filterwarnings(r"ignore::DeprecationWarning:crewai\..*")


class ProposeOnce(BaseLLM):
    """Calls propose_fix, then answers "done"; keeps what it read back."""

    read: list[str] = []  # noqa: RUF012 (a pydantic field: copied per instance)

    def call(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        replies = [str(m["content"]) for m in messages if m.get("role") == "tool"]
        if not replies:
            call = {"name": "propose_fix", "arguments": json.dumps(ARGUMENTS)}
            return [{"id": "p", "type": "function", "function": call}]
        self.read = replies
        return "done"

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def get_input_tokens_count(self, messages: Any, tools: Any = None, **_: Any) -> int:
        return 1


def drive(s: Scenario, user: str, mode: str) -> str:
    llm = ProposeOnce(model="scripted")
    agent = Agent(
        role="Maintainer",
        goal="Fix typos",
        backstory="Scripted",
        llm=llm,
        tools=[tool(s.propose_fix)],
    )
    task = Task(description="Fix the typo in the README", expected_output="done", agent=agent)
    crew = Crew(agents=[agent], tasks=[task])
    inputs = {"user_id": user}
    with ToolpassHooks(s.engine):
        if mode == "kickoff":
            result: Any = crew.kickoff(inputs=inputs)
        elif mode == "kickoff_async":
            result = asyncio.run(crew.kickoff_async(inputs=inputs))
        else:
            result = asyncio.run(crew.akickoff(inputs=inputs))
    assert result.raw == "done"  # the run went on after the tool call
    [reply] = llm.read
    return reply


MODES = ["kickoff", "kickoff_async", "akickoff"]


@pytest.mark.parametrize("mode", MODES)
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY_NOT, mode)
        # The refusal raised inside the tool's body reached the model as the tool's result,
        # not as CrewAI's "Tool execution blocked by hook" text; the run went on.
        assert reply.startswith("Refused by toolpass (not_authorized)"), reply
        s.assert_refused(reply)


@pytest.mark.parametrize("mode", MODES)
def test_a_user_who_may_opens_the_pull_request(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY, mode)
        s.assert_opened(reply)
