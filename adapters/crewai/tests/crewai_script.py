"""A scripted model for CrewAI's real agent loop (a ``BaseLLM`` subclass, CrewAI having no
fake LLM of its own): it makes the given tool calls, one per model response, then answers
"done", reading its state from the messages so one model serves concurrent runs; and what the
model read back after each tool call.

``native=True`` speaks CrewAI's native tool calling (OpenAI-style tool calls in, ``role:
tool`` messages back); ``native=False`` its ReAct text protocol (``Action:`` / ``Action
Input:`` in, ``Observation:`` back).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool, tool
from pydantic import PrivateAttr

OBSERVATION = re.compile(r"Observation:\s*(.*?)(?=\n\s*(?:Thought|Action|Final Answer)\b|\Z)", re.S)


class ScriptedLLM(BaseLLM):
    script: list[tuple[str, dict[str, Any]]] = []
    final: str = "done"
    native: bool = True
    _read: list[list[str]] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        outputs = read_back(messages, native=self.native)
        with self._lock:
            self._read.append(outputs)
        made = len(outputs)
        if made < len(self.script):
            name, arguments = self.script[made]
            if self.native:
                return [
                    {
                        "id": f"c{made}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ]
            return f"Thought: I call {name}.\nAction: {name}\nAction Input: {json.dumps(arguments)}"
        return self.final if self.native else f"Thought: I know.\nFinal Answer: {self.final}"

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)

    def supports_function_calling(self) -> bool:
        return self.native

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def get_input_tokens_count(self, messages: Any, tools: Any = None, **_: Any) -> int:
        return 1

    @property
    def outputs(self) -> list[str]:
        """What the model read after each tool call, as of its last response."""
        with self._lock:
            return list(self._read[-1]) if self._read else []


def read_back(messages: Any, *, native: bool = True) -> list[str]:
    if isinstance(messages, str):
        return []
    if native:
        return [str(m.get("content")) for m in messages if m.get("role") == "tool"]
    text = "\n".join(str(m.get("content")) for m in messages if m.get("role") != "system")
    return [o.strip() for o in OBSERVATION.findall(text)]


def crew_tools(functions: Sequence[Any]) -> list[BaseTool]:
    return [tool(f) for f in functions]


def crew(
    script: Sequence[tuple[str, dict[str, Any]]],
    tools: Sequence[BaseTool],
    *,
    native: bool = True,
    final: str = "done",
) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(model="scripted", script=list(script), native=native, final=final)
    agent = Agent(role="Assistant", goal="Help", backstory="Scripted", llm=llm, tools=list(tools))
    task = Task(description="Do what is asked.", expected_output="done", agent=agent)
    return Crew(agents=[agent], tasks=[task]), llm
