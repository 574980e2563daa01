"""The adapter interface through the SDK's real loop: ``session=`` (runs of one conversation,
linked by ``RunConfig.group_id``, share a session), and options, rules and tools checked when
the guardrails are made and applied, not when a call arrives."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.mcp import MCPServerStdio, MCPServerStdioParams
from agents.testing import ScriptedModel, assistant_message, function_call
from pytest_toolpass import ScriptedEngine
from scripted import Ctx
from toolpass import Decision, Toolkit
from toolpass.openai_agents import Rule, ToolpassGuardrails

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {
    (u, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for u in (DANA, ERIN) for n in range(5)
}


def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


def whoami() -> str:
    """Who this call acts for."""
    return "someone"


def limited(**options: Any) -> ToolpassGuardrails:
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    return ToolpassGuardrails(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=kit, **options
    )


def chat(guard: ToolpassGuardrails, runs: int) -> Agent[Any]:
    """An agent whose model deletes PAY-<n> in its n-th run, then says "done"."""
    steps: list[Any] = []
    for n in range(runs):
        steps += [
            [function_call("delete_issue", {"key": f"PAY-{n}"}, call_id=f"c{n}")],
            [assistant_message("done")],
        ]
    tools = [function_tool(delete_issue), function_tool(whoami)]
    return guard.apply(Agent(name="a", model=ScriptedModel(steps), tools=tools))


def said(agent: Agent[Any], user: str, group: str | None) -> str:
    """One run (a new context object, as applications make one per run): what the model read
    back from its tool call."""
    config = RunConfig(group_id=group, tracing_disabled=True)
    result = asyncio.run(Runner.run(agent, "go", context=Ctx(user), run_config=config))
    [output] = [
        i.output for i in result.new_items if getattr(i, "type", "") == "tool_call_output_item"
    ]
    return str(output)


def test_runs_of_one_conversation_share_its_limit() -> None:
    """The bypass: every run was a new session, so a chat (a run per message) reset its
    limits and taint at every message."""
    agent = chat(limited(), 4)
    assert said(agent, DANA, "chat-1") == "deleted PAY-0"
    assert "limit_exceeded" in said(agent, DANA, "chat-1")
    assert said(agent, DANA, "chat-2") == "deleted PAY-2"  # another conversation
    assert said(agent, ERIN, "chat-1") == "deleted PAY-3"  # another user


def test_session_run_and_runs_without_a_conversation_start_afresh() -> None:
    agent = chat(limited(session="run"), 2)
    assert said(agent, DANA, "chat-1") == "deleted PAY-0"
    assert said(agent, DANA, "chat-1") == "deleted PAY-1"
    agent = chat(limited(), 2)
    assert said(agent, DANA, None) == "deleted PAY-0"
    assert said(agent, DANA, None) == "deleted PAY-1"


def test_a_session_callable_is_given_the_run_context() -> None:
    agent = chat(limited(session=lambda ctx: f"desk-{ctx.user_id}"), 2)
    assert said(agent, DANA, "chat-1") == "deleted PAY-0"
    assert "limit_exceeded" in said(agent, DANA, "chat-2")


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"engine": "https://toolpass.example"}, TypeError, "permission engine"),
        ({"rules": {"delete_issue": ("jira", "DELETE_ISSUES")}}, TypeError, "a rule is"),
        ({"rules": {"delete_issue": Rule("jira", "X", "issue:{0}")}}, ValueError, "plain"),
        ({"session": "chat"}, TypeError, "session"),
        ({"user": 7}, TypeError, "user"),
        ({"on_refuse": "no"}, TypeError, "on_refuse"),
        ({"strcit": True}, TypeError, "strcit"),
    ],
)
def test_a_bad_option_is_an_error_when_built(
    options: dict[str, Any], error: type, match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    with pytest.raises(error, match=match):
        ToolpassGuardrails(**options)


def test_apply_checks_the_rules_against_the_agents_tools() -> None:
    def agent() -> Agent[Any]:
        return Agent(name="a", tools=[function_tool(delete_issue), function_tool(whoami)])

    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        ToolpassGuardrails(ScriptedEngine(), {"delete_isue": DELETE}).apply(agent())
    wrong = Rule("jira", "DELETE_ISSUES", "issue:{issue_key}")
    with pytest.raises(ValueError, match="names issue_key, which the tool does not take"):
        ToolpassGuardrails(ScriptedEngine(), {"delete_issue": wrong}).apply(agent())
    guard = ToolpassGuardrails(ScriptedEngine(), {"delete_issue": DELETE})
    guard.apply(agent())
    explained = guard.guard.explain()
    assert explained.unchecked == ["whoami"]
    assert "whoami        UNCHECKED (no rule)" in str(explained)


def test_a_rule_that_may_name_an_mcp_tool_is_not_an_error_at_apply() -> None:
    server = MCPServerStdio(MCPServerStdioParams(command=sys.executable, args=["-c", "pass"]))
    agent = Agent(name="a", tools=[function_tool(whoami)], mcp_servers=[server])
    guard = ToolpassGuardrails(ScriptedEngine(), {"jira_delete": DELETE})
    guard.apply(agent)  # its tools are listed only when the agent runs
    assert "tools known only as the agent runs" in str(guard.guard.explain())
