"""The adapter's interface: options, rules and tools checked when the callbacks are made or
applied (not when a call arrives), ``apply`` idempotent and composable with the plugin, a
toolset's tools wrapped as it lists them, and ``explain``."""

from __future__ import annotations

from typing import Any

import pytest
from adk_script import agent_with, read_back, run, runner_for, scripted
from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from pytest_toolpass import KitTools, ScriptedEngine
from toolpass import AuditEvent, Decision, Toolkit
from toolpass.google_adk import Rule, ToolpassCallbacks

DANA = "dana@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")


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
        ({"sesion": "run"}, TypeError, "sesion"),
    ],
)
def test_a_bad_option_is_an_error_when_made(
    options: dict[str, Any], error: type, match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    with pytest.raises(error, match=match):
        ToolpassCallbacks(**options)


def test_a_plugin_needs_a_name() -> None:
    with pytest.raises(TypeError, match="name"):
        ToolpassCallbacks(ScriptedEngine()).plugin(" ")


def test_apply_takes_an_agent() -> None:
    with pytest.raises(TypeError, match="ADK agent"):
        ToolpassCallbacks(ScriptedEngine()).apply("agent")  # type: ignore[arg-type]


def test_apply_checks_the_rules_against_the_whole_tree() -> None:
    def tree() -> LlmAgent:
        tools = KitTools().functions()
        inner = LlmAgent(name="inner", model=scripted([]), tools=[tools[1]])
        helper = LlmAgent(name="helper", description="h", model=scripted([]), tools=[tools[2]])
        return LlmAgent(
            name="root", model=scripted([]), tools=[tools[0], AgentTool(inner)], sub_agents=[helper]
        )

    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        ToolpassCallbacks(ScriptedEngine(), {"delete_isue": DELETE}).apply(tree())
    wrong = Rule("jira", "DELETE_ISSUES", "issue:{issue}")
    with pytest.raises(ValueError, match="names issue, which the tool does not take"):
        ToolpassCallbacks(ScriptedEngine(), {"delete_issue": wrong}).apply(tree())
    # delete_issue is the agent-tool's agent's: found there.
    callbacks = ToolpassCallbacks(ScriptedEngine(), {"delete_issue": DELETE})
    callbacks.apply(tree())
    explained = callbacks.guard.explain()
    assert explained.unchecked == ["inner", "read_file", "whoami"]
    assert "delete_issue  jira DELETE_ISSUES issue:{key}" in str(explained)


def test_apply_twice_and_the_plugin_too_still_check_each_call_once() -> None:
    events: list[AuditEvent] = []
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=Toolkit(audit=events.append))
    tools = KitTools()
    agent = agent_with(tools.functions(), [("whoami", {})])
    callbacks.apply(callbacks.apply(agent))
    assert agent.before_tool_callback == callbacks.before_tool_callback
    out, _ = run(runner_for(agent, [callbacks.plugin()]), DANA)
    assert f"acting for {DANA}" in read_back(out)[0]
    assert [e.tool for e in events] == ["whoami"]


def test_the_agents_own_callbacks_are_kept_first() -> None:
    def mine(tool: Any, args: Any, tool_context: Any) -> None:
        return None

    agent = agent_with(KitTools().functions(), [], before_tool_callback=mine)
    callbacks = ToolpassCallbacks(ScriptedEngine())
    callbacks.apply(agent)
    assert agent.before_tool_callback == [mine, callbacks.before_tool_callback]
    assert agent.on_tool_error_callback == callbacks.on_tool_error_callback


class Issues(BaseToolset):
    """A toolset whose tools are only known as the agent runs."""

    def __init__(self, tools: KitTools) -> None:
        super().__init__(tool_name_prefix="jira")
        self.made = [FunctionTool(f) for f in tools.functions()]

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        return list(self.made)


@pytest.mark.parametrize("how", ["apply", "plugin"])
def test_a_toolsets_tools_are_checked_under_their_prefixed_names(how: str) -> None:
    events: list[AuditEvent] = []
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    callbacks = ToolpassCallbacks(
        engine, {"jira_delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    tools = KitTools()
    calls = [("jira_delete_issue", {"key": "PAY-1"}), ("jira_whoami", {})]
    agent = agent_with([Issues(tools)], calls)
    runner = (
        runner_for(callbacks.apply(agent))
        if how == "apply"
        else runner_for(agent, [callbacks.plugin()])
    )
    out, _ = run(runner, DANA)
    assert read_back(out)[0] == "deleted PAY-1"
    assert f"acting for {DANA}" in read_back(out)[1]
    assert engine.asked == [(DANA, "jira", "DELETE_ISSUES", "issue:PAY-1")]
    assert [e.tool for e in events] == ["jira_delete_issue", "jira_whoami"]


def test_a_rule_that_does_not_fit_a_toolsets_tools_warns_when_they_are_listed() -> None:
    wrong = Rule("jira", "DELETE_ISSUES", "issue:{issue}")
    callbacks = ToolpassCallbacks(ScriptedEngine(), {"jira_delete_issue": wrong})
    agent = callbacks.apply(agent_with([Issues(KitTools())], []))  # not known yet: no error
    with pytest.warns(UserWarning, match="names issue, which the tool does not take"):
        run(runner_for(agent), DANA)


def test_the_plugin_warns_of_a_rule_that_does_not_fit_an_agents_tools() -> None:
    wrong = Rule("jira", "DELETE_ISSUES", "issue:{issue}")
    callbacks = ToolpassCallbacks(ScriptedEngine(), {"delete_issue": wrong})
    agent = agent_with(KitTools().functions(), [])
    with pytest.warns(UserWarning, match="names issue, which the tool does not take"):
        run(runner_for(agent, [callbacks.plugin()]), DANA)
