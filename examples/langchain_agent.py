"""The helpdesk story (examples/helpdesk.py) through LangChain's real agent loop, offline.

``create_agent`` with a scripted chat model (LangChain's ``GenericFakeChatModel``, no API key),
guarded by ``ToolpassMiddleware``; the user comes from the run's context, the conversation from
the session callable. Needs ``pip install ./core ./adapters/langchain`` (or, once published,
``pip install toolpass-langchain``).

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
from toolpass.langchain import ToolpassMiddleware


class ScriptedChat(GenericFakeChatModel):
    """Answers with the next scripted message; needs no binding of tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


@dataclass
class Context:
    user_id: str  # the application's user, never the model's


guard = ToolpassMiddleware(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)


def run(script: Script) -> list[str]:
    turns: list[Any] = [
        AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{i}"}])
        for i, (name, args) in enumerate(script)
    ]
    model = ScriptedChat(messages=iter([*turns, "done"]))
    agent: Any = create_agent(model, tools=TOOLS, middleware=[guard], context_schema=Context)
    state = agent.invoke({"messages": [HumanMessage("Tidy up PAY")]}, context=Context(USER))
    return [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


if __name__ == "__main__":
    main("LangChain", run)
