"""The adapter interface: options checked when ``ToolpassHooks`` is made, rules checked against
the tools as the crew calls them, groups of tools sharing a rule, and the namespace."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from crewai.tools import tool
from crewai_script import crew
from pytest_toolpass import ScriptedEngine
from toolpass import Decision
from toolpass.crewai import Rule, ToolpassHooks

DANA = "dana@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")


@tool
def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


@tool
def close_issue(key: str) -> str:
    """Close an issue."""
    return f"closed {key}"


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"engine": None}, TypeError, "permission engine"),
        ({"rules": {"delete_issue": Rule("jira", "X", "issue:{key.id}")}}, ValueError, "plain"),
        ({"rules": {"delete_issue": ("jira", "X")}}, TypeError, "a rule is"),
        ({"rules": {("delete_issue", "delete_issue"): DELETE}}, ValueError, "two rules"),
        ({"session": "thread"}, TypeError, "session"),
        ({"user": 3}, TypeError, "user"),
        ({"on_refuse": "text"}, TypeError, "on_refuse"),
        ({"strict": 1}, TypeError, "strict"),
        ({"sesion": "run"}, TypeError, "sesion"),
    ],
)
def test_a_bad_option_is_an_error_when_made(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    with pytest.raises(error, match=match):
        ToolpassHooks(**options)


def test_a_group_of_tools_shares_one_rule() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    hooks = ToolpassHooks(engine, {("delete_issue", "close_issue"): DELETE}, strict=True)
    built, llm = crew(
        [("close_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"})],
        [delete_issue, close_issue],
    )
    with hooks:
        built.kickoff(inputs={"user_id": DANA})
    assert llm.outputs[0] == "closed PAY-1"
    assert "not_authorized" in llm.outputs[1]
    assert [a[3] for a in engine.asked] == ["issue:PAY-1", "issue:PAY-2"]


def test_rules_are_checked_against_the_agent_s_tools_at_its_first_call() -> None:
    wrong = Rule("jira-main", "DELETE_ISSUES", "issue:{issue}")
    hooks = ToolpassHooks(ScriptedEngine(), {"delete_issue": wrong, "close_issue": DELETE})
    built, _ = crew([("close_issue", {"key": "PAY-1"})], [delete_issue, close_issue])
    with hooks, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built.kickoff(inputs={"user_id": DANA})
    [warned] = [str(w.message) for w in caught if w.category is UserWarning]
    assert "names issue, which the tool does not take" in warned
    explained = hooks.guard.explain()
    assert set(explained.tools) == {"delete_issue", "close_issue"}
    assert explained.problems


def test_the_adapter_adds_one_module_to_the_toolpass_namespace() -> None:
    import toolpass
    import toolpass.crewai

    assert toolpass.crewai.__file__ is not None
    assert any("adapters/crewai" in p or "site-packages" in p for p in toolpass.__path__)
    assert hasattr(toolpass, "Toolpass")  # core's public API, beside the adapter
