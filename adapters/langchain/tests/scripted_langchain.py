"""What the LangChain tests share: a scripted chat model for the real agent loop, the run
context, how to read back what the model was given after each tool call, and the tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pytest_toolpass import Call, Transcript
from toolpass import Decision, current_session
from toolpass.adapting import Rule


class ScriptedChat(GenericFakeChatModel):
    """``GenericFakeChatModel`` cannot bind tools; the script already knows its calls."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


def turn(*calls: Call, start: int = 0) -> AIMessage:
    """One model turn making ``calls`` (several at once: parallel tool calls)."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": c.tool, "args": dict(c.arguments), "id": f"call_{start + i}"}
            for i, c in enumerate(calls)
        ],
    )


def scripted(script: Sequence[Call | Sequence[Call]], final: str = "done") -> ScriptedChat:
    """A model making each of ``script``'s calls (or groups of calls) in its own turn, then
    answering ``final``."""
    turns: list[AIMessage | str] = []
    n = 0
    for step in script:
        calls = (step,) if isinstance(step, Call) else tuple(step)
        turns.append(turn(*calls, start=n))
        n += len(calls)
    turns.append(final)
    return ScriptedChat(messages=iter(turns))


@dataclass
class Context:
    """The application's run context: who the run acts for."""

    user_id: str | None = None


def transcript(messages: Sequence[BaseMessage]) -> Transcript:
    """What the model read after each tool call, and its last answer."""
    outputs = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    return Transcript(outputs, str(messages[-1].content))


DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")
DANA_MAY_DELETE_PAY_1 = {(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()}


class Tools:
    """Plain functions as LangChain takes them; ``ran`` records what actually ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def all(self) -> list[Callable[..., str]]:
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.ran.append(("delete_issue", {"key": key}))
            return f"deleted {key}"

        def close_issue(key: str) -> str:
            """Close an issue."""
            self.ran.append(("close_issue", {"key": key}))
            return f"closed {key}"

        def assign_issue(key: str, user_id: str) -> str:
            """Assign an issue to a user."""
            self.ran.append(("assign_issue", {"key": key, "user_id": user_id}))
            session = current_session()
            return f"assigned {key} to {user_id} acting for {session and session.user}"

        def whoami() -> str:
            """Who this call acts for."""
            self.ran.append(("whoami", {}))
            session = current_session()
            return f"acting for {session.user if session else 'nobody'}"

        def explode() -> str:
            """A tool that fails."""
            raise ValueError("secret internal detail")

        return [delete_issue, close_issue, assign_issue, whoami, explode]
