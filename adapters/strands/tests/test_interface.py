"""The adapter interface through Strands' real loop: ``session=`` (the agent's conversation, a
session manager's id across agent instances, one invocation, or the application's id),
options and rules checked when the handler is made (or, for the agent's tools, when it is
first invoked), and what is not a tool call (the structured-output tool) left alone."""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pytest_toolpass import ScriptedEngine
from strands import Agent, tool
from strands.models.model import Model
from strands.session.file_session_manager import FileSessionManager
from strands_script import ScriptedModel, read_back
from toolpass import Decision, Toolkit, current_session
from toolpass.strands import Rule, ToolpassAuthorization

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {
    (u, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for u in (DANA, ERIN) for n in range(5)
}


@tool
def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


@tool
def whoami() -> str:
    """Who this call acts for."""
    return "someone"


@tool
def which_session() -> str:
    """The toolpass session this call runs in."""
    session = current_session()
    return "none" if session is None else session.id


class OneCallPerPrompt(Model):
    """Deletes PAY-<n> (n: the calls made so far in the conversation) after each prompt, then
    says "done"; or calls ``tool`` (no arguments) when one is named."""

    def __init__(self, tool: str | None = None) -> None:
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
        answered = any("toolResult" in block for block in messages[-1]["content"])
        made = sum(
            "toolUse" in block
            for message in messages
            if message["role"] == "assistant"
            for block in message["content"]
        )
        yield {"messageStart": {"role": "assistant"}}
        if answered:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "done"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        name = self.tool or "delete_issue"
        arguments = "{}" if self.tool else f'{{"key": "PAY-{made}"}}'
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"c{made}", "name": name}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def chat(
    kit: Toolkit | None = None, manager: Any = None, tool: str | None = None, **options: Any
) -> Agent:
    kit = kit or Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    guard = ToolpassAuthorization(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=kit, **options
    )
    return Agent(
        model=OneCallPerPrompt(tool),
        tools=[delete_issue, whoami, which_session],
        interventions=[guard],
        session_manager=manager,
        callback_handler=None,
    )


def said(agent: Agent, user: str) -> str:
    agent("go", invocation_state={"user_id": user})
    return read_back(agent)[-1]


def test_a_conversation_keeps_its_session_over_invocations() -> None:
    agent = chat()
    assert said(agent, DANA) == "deleted PAY-0"
    assert "limit_exceeded" in said(agent, DANA)  # the same conversation: its limit holds
    assert said(agent, ERIN) == "deleted PAY-2"  # another user of it: their own session
    assert said(chat(), DANA) == "deleted PAY-0"  # a new conversation


def test_a_session_managers_conversation_continues_in_a_new_agent(tmp_path: Path) -> None:
    """A conversation restored by another agent instance (and another handler, as an
    application that builds both for each request does) continues its toolpass session."""
    kit = Toolkit(audit=[])

    def session_of(session_id: str) -> str:
        manager = FileSessionManager(session_id, storage_dir=str(tmp_path))
        return said(chat(kit, manager, tool="which_session"), DANA)

    first = session_of("chat-7")
    assert first != "none"
    assert session_of("chat-7") == first  # restored: the same session
    assert session_of("chat-8") != first  # another conversation


def test_session_run_starts_afresh_at_every_invocation() -> None:
    agent = chat(session="run")
    assert said(agent, DANA) == "deleted PAY-0"
    assert said(agent, DANA) == "deleted PAY-1"
    agent = chat(session="run", tool="which_session")
    assert said(agent, DANA) != said(agent, DANA)


def test_a_session_callable_is_given_the_event() -> None:
    seen: list[str] = []

    def desk(event: Any) -> str:
        seen.append(event.tool_use["name"])
        return f"desk-{event.invocation_state['user_id']}"

    kit = Toolkit(audit=[])
    first = said(chat(kit, session=desk, tool="which_session"), DANA)
    again = said(chat(kit, session=desk, tool="which_session"), DANA)  # a new agent, same desk
    assert first == again
    assert said(chat(kit, session=desk, tool="which_session"), ERIN) != first
    assert seen == ["which_session"] * 3


def test_a_session_callable_that_fails_refuses() -> None:
    def broken(event: Any) -> str:
        raise RuntimeError("no desk")

    text = said(chat(session=broken), DANA)
    assert "check_error" in text
    assert "no desk" not in text


def test_the_user_key_can_be_named() -> None:
    agent = chat(user="email")
    agent("go", invocation_state={"email": DANA, "user_id": ERIN})
    assert read_back(agent) == ["deleted PAY-0"]


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"engine": None}, TypeError, "permission engine"),
        ({"rules": {"delete_issue": Rule("jira", "X", "issue:{key.id}")}}, ValueError, "plain"),
        ({"rules": {"delete_issue": ("jira", "X")}}, TypeError, "a rule is"),
        ({"session": "thread"}, TypeError, "session"),
        ({"user": 7}, TypeError, "user"),
        ({"on_refuse": 3}, TypeError, "on_refuse"),
        ({"strict": "yes"}, TypeError, "strict"),
        ({"name": ""}, TypeError, "name"),
        ({"tools": [print]}, TypeError, "Strands tools"),
        ({"sesion": "run"}, TypeError, "sesion"),
    ],
)
def test_a_bad_option_is_an_error_when_made(
    options: dict[str, Any], error: type, match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    with pytest.raises(error, match=match):
        ToolpassAuthorization(**options)


def test_the_rules_are_checked_against_the_tools_given() -> None:
    tools = [delete_issue, whoami]
    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        ToolpassAuthorization(ScriptedEngine(), {"delete_isue": DELETE}, tools=tools)
    wrong = Rule("jira-main", "DELETE_ISSUES", "issue:{issue}")
    with pytest.raises(ValueError, match="names issue, which the tool does not take"):
        ToolpassAuthorization(ScriptedEngine(), {"delete_issue": wrong}, tools=tools)
    guard = ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE}, tools=tools)
    assert guard.guard.explain().unchecked == ["whoami"]


def test_the_rules_are_checked_against_the_agents_tools_when_first_invoked() -> None:
    guard = ToolpassAuthorization(ScriptedEngine(MAY_DELETE), {"delete_isue": DELETE})
    agent = Agent(
        model=OneCallPerPrompt(),
        tools=[delete_issue, whoami],
        interventions=[guard],
        callback_handler=None,
    )
    with pytest.warns(UserWarning, match="tools the agent does not have: delete_isue"):
        agent("go", invocation_state={"user_id": DANA})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent("go", invocation_state={"user_id": DANA})  # told once
    assert guard.guard.explain().complete


def test_the_handlers_name_can_be_changed_so_two_can_sit_in_one_agent() -> None:
    kit = Toolkit(audit=[])
    outer = ToolpassAuthorization(ScriptedEngine(MAY_DELETE), toolkit=kit, name="toolpass-a")
    inner = ToolpassAuthorization(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=kit, name="toolpass-b"
    )
    agent = Agent(
        model=OneCallPerPrompt(),
        tools=[delete_issue],
        interventions=[outer, inner],
        callback_handler=None,
    )
    assert said(agent, DANA) == "deleted PAY-0"


class Answer(BaseModel):
    text: str


def test_the_structured_output_tool_is_not_a_call_to_check() -> None:
    guard = ToolpassAuthorization(ScriptedEngine(), {}, strict=True)
    agent = Agent(
        model=ScriptedModel([("Answer", {"text": "hi"})]),
        interventions=[guard],
        callback_handler=None,
    )
    result = agent("go", invocation_state={"user_id": DANA}, structured_output_model=Answer)
    assert result.structured_output == Answer(text="hi")


def test_a_direct_tool_call_without_a_user_is_refused() -> None:
    agent = chat()
    result = agent.tool.delete_issue(key="PAY-1")
    assert result["status"] == "error"
    assert "no_session" in result["content"][0]["text"]
