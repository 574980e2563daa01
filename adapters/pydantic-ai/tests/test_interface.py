"""The adapter interface through Pydantic AI's real loop: ``session=`` (a conversation
continued over several runs with its message history keeps its session), and options, rules
and tools checked when the capability or toolset is made, not when a call arrives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai_script import read_back, run_sync
from pytest_toolpass import ScriptedEngine
from toolpass import Decision, Toolkit, ToolRefused
from toolpass.pydantic_ai import Rule, ToolpassAuthorization, ToolpassToolset

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {
    (u, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for u in (DANA, ERIN) for n in range(5)
}


@dataclass
class Deps:
    user: str


def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


def whoami() -> str:
    """Who this call acts for."""
    return "someone"


def one_call_per_run(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Deletes PAY-<n> (n: the calls made so far in the conversation), then says "done"."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        return ModelResponse(parts=[TextPart("done")])
    made = sum(
        isinstance(p, ToolCallPart)
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
    )
    return ModelResponse(parts=[ToolCallPart("delete_issue", {"key": f"PAY-{made}"})])


def chat(**options: Any) -> Agent[Deps, str]:
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    guard = ToolpassAuthorization(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=kit, **options
    )
    return Agent(
        FunctionModel(one_call_per_run),
        deps_type=Deps,
        tools=[delete_issue, whoami],
        capabilities=[guard],
    )


def said(agent: Agent[Deps, str], user: str, history: list[ModelMessage] | None) -> Any:
    result = run_sync(agent, "go", deps=Deps(user), message_history=history)
    return read_back(result.new_messages())[-1], result.all_messages()


def test_a_conversation_continued_over_two_runs_keeps_its_limit() -> None:
    """The bypass: every run was a new session, so a chat continued with its message history
    (one run per message) reset its limits and taint at every message."""
    agent = chat()
    first, history = said(agent, DANA, None)
    assert first == "deleted PAY-0"
    second, _ = said(agent, DANA, history)
    assert "limit_exceeded" in second
    fresh, _ = said(agent, DANA, None)  # a new conversation
    assert fresh == "deleted PAY-0"
    other, _ = said(agent, ERIN, history)  # another user continuing it: their own session
    assert other == "deleted PAY-1"


def test_session_run_starts_afresh_at_every_run() -> None:
    agent = chat(session="run")
    first, history = said(agent, DANA, None)
    assert first == "deleted PAY-0"
    second, _ = said(agent, DANA, history)
    assert second == "deleted PAY-1"


def test_a_session_callable_is_given_the_run_context() -> None:
    agent = chat(session=lambda ctx: f"desk-{ctx.deps.user}")
    first, _ = said(agent, DANA, None)
    assert first == "deleted PAY-0"
    again, _ = said(agent, DANA, None)  # a new conversation, the same desk
    assert "limit_exceeded" in again


def test_on_refuse_none_ends_the_run() -> None:
    agent = chat(on_refuse=None)
    with pytest.raises(ToolRefused):
        run_sync(agent, "go", deps=Deps("nobody@example.com"))


@pytest.mark.parametrize("kind", [ToolpassAuthorization, ToolpassToolset])
@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"engine": None}, TypeError, "permission engine"),
        ({"rules": {"delete_issue": Rule("jira", "X", "issue:{key.id}")}}, ValueError, "plain"),
        ({"rules": {"delete_issue": ("jira", "X")}}, TypeError, "a rule is"),
        ({"session": "thread"}, TypeError, "session"),
        ({"on_refuse": 3}, TypeError, "on_refuse"),
        ({"sesion": "run"}, TypeError, "sesion"),
    ],
)
def test_a_bad_option_is_an_error_when_built(
    kind: Any, options: dict[str, Any], error: type, match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    if kind is ToolpassToolset:
        options["wrapped"] = FunctionToolset([delete_issue])
    with pytest.raises(error, match=match):
        kind(**options)


def test_a_toolset_checks_the_rules_against_its_tools_when_made() -> None:
    tools = FunctionToolset([delete_issue, whoami])
    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        ToolpassToolset(tools, ScriptedEngine(), {"delete_isue": DELETE})
    wrong = Rule("jira-main", "DELETE_ISSUES", "issue:{issue}")
    with pytest.raises(ValueError, match="names issue, which the tool does not take"):
        ToolpassToolset(tools, ScriptedEngine(), {"delete_issue": wrong})
    guard = ToolpassToolset(tools, ScriptedEngine(), {"delete_issue": DELETE})
    assert guard.guard is not None
    assert guard.guard.explain().unchecked == ["whoami"]


def test_the_capability_warns_of_a_rule_for_a_tool_the_agent_lacks_before_any_call() -> None:
    agent = Agent(
        FunctionModel(one_call_per_run),
        deps_type=Deps,
        tools=[delete_issue, whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine(MAY_DELETE), {"delete_isue": DELETE})],
    )
    with pytest.warns(UserWarning, match="tools the agent does not have: delete_isue"):
        run_sync(agent, "go", deps=Deps(DANA))
