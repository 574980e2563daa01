"""The helpdesk story (examples/helpdesk.py) through LangChain's real agent loop, offline.

``create_agent`` with a scripted chat model (LangChain's ``GenericFakeChatModel``, no API key),
guarded by ``ToolpassMiddleware``; the user comes from the run's context, the conversation from
the session callable. The deploy waits for a person: the run pauses with LangGraph's
``interrupt()`` (the run has a checkpointer), whose value is toolpass's request
(``{"type": "toolpass_approval", "request_id": ..., "tool": ..., "arguments": ...,
"reasons": ...}``); once a person has decided, ``Command(resume=...)`` resumes the thread and
toolpass checks the call again before it runs. Needs
``pip install ./core ./adapters/langchain`` (or, once published, ``pip install
toolpass-langchain``).

    python examples/langchain_agent.py
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

os.environ["LANGSMITH_TRACING"] = "false"  # no trace leaves for LangSmith
os.environ["LANGCHAIN_TRACING_V2"] = "false"
os.environ["LANGCHAIN_TRACING"] = "false"

from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from toolpass.langchain import ToolpassMiddleware


class ScriptedChat(GenericFakeChatModel):
    """Answers with the next scripted message; needs no binding of tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


@dataclass
class Context:
    user_id: str  # the application's user, never the model's


guard = ToolpassMiddleware(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)
saver = InMemorySaver()  # where LangGraph keeps a paused run (a database in production)
thread = {"configurable": {"thread_id": "helpdesk-1"}}
#: The approval requests the paused run waits for, if it paused.
waiting: list[dict[str, Any]] = []


def run(script: Script) -> list[str]:
    """The first run; the second, once a person has decided, is the first one resumed."""
    turns: list[Any] = [
        AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{i}"}])
        for i, (name, args) in enumerate(script)
    ]
    # Resumed, the paused call is the model's last: it then answers "done".
    model = ScriptedChat(messages=iter(["done"] if waiting else [*turns, "done"]))
    agent: Any = create_agent(
        model, tools=TOOLS, middleware=[guard], context_schema=Context, checkpointer=saver
    )
    before = len(_read(agent))
    if waiting:  # the person decided on the approvals page; resume the paused thread
        [asked] = waiting
        waiting.clear()
        go_on = Command(resume={"decision": "approve", "request_id": asked["request_id"]})
        state = agent.invoke(go_on, thread, context=Context(USER))
    else:
        state = agent.invoke(
            {"messages": [HumanMessage("Tidy up PAY")]}, thread, context=Context(USER)
        )
    read = _read(agent)[before:]
    for pause in state.get("__interrupt__", ()):
        waiting.append(pause.value)
        read.append(
            f"(the run pauses for a person: interrupt {pause.value['type']}, "
            f"request {pause.value['request_id']})"
        )
    return read


def _read(agent: Any) -> list[str]:
    """What the model read back after each tool call in the thread so far."""
    messages = agent.get_state(thread).values.get("messages", [])
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


if __name__ == "__main__":
    main("LangChain", run)
