"""The adapter interface through LangChain's real loop: ``session=`` (a thread continued over
several invokes keeps its session), and options, rules and tools checked when the middleware
and its ``ToolNode`` are made, not when a call arrives."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DELETE, ERIN, Context, ScriptedChat, Tools, turn
from toolpass import Decision, Toolkit, Toolpass, ToolRefused
from toolpass.langchain import Rule, ToolpassMiddleware

MAY_DELETE = {
    (u, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow()
    for u in (DANA, ERIN)
    for n in range(1, 5)
}


def delete(n: int) -> Call:
    return Call("delete_issue", {"key": f"PAY-{n}"})


def turns(guard: ToolpassMiddleware, script: list[Call], *, saver: bool = True) -> Any:
    """An agent whose model makes ``script``'s calls one per invoke (then says "done")."""
    model = ScriptedChat(messages=iter(_interleaved(script)))
    return create_agent(
        model,
        tools=Tools().all(),
        middleware=[guard],
        context_schema=Context,
        checkpointer=InMemorySaver() if saver else None,
    )


def _interleaved(script: list[Call]) -> list[Any]:
    out: list[Any] = []
    for n, call in enumerate(script):
        out += [turn(call, start=n), "done"]
    return out


def invoke(agent: Any, user: str, thread: str | None, mode: str) -> str:
    """One invoke for ``user`` on ``thread``: what the model read from its last tool call."""
    config: Any = {"configurable": {"thread_id": thread}} if thread else {}
    go = {"messages": [HumanMessage("go")]}
    if mode == "sync":
        state = agent.invoke(go, config=config, context=Context(user))
    else:
        state = asyncio.run(agent.ainvoke(go, config=config, context=Context(user)))
    assert state["messages"][-1].content == "done"
    return str([m for m in state["messages"] if isinstance(m, ToolMessage)][-1].content)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def limited(**options: Any) -> ToolpassMiddleware:
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    return ToolpassMiddleware(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=kit, **options
    )


def test_a_thread_continued_over_two_invokes_keeps_its_limit(mode: str) -> None:
    """The bypass: each invoke was a new session, so a conversation continued over several
    invokes (a chat, one invoke per message) reset its limits and taint at every message."""
    agent = turns(limited(), [delete(1), delete(2), delete(3), delete(4)])
    assert invoke(agent, DANA, "t-1", mode) == "deleted PAY-1"
    assert "limit_exceeded" in invoke(agent, DANA, "t-1", mode)  # the same thread
    assert invoke(agent, DANA, "t-2", mode) == "deleted PAY-3"  # another thread: afresh
    assert invoke(agent, ERIN, "t-1", mode) == "deleted PAY-4"  # another user: afresh


def test_session_run_starts_afresh_at_every_invoke(mode: str) -> None:
    agent = turns(limited(session="run"), [delete(1), delete(2)])
    assert invoke(agent, DANA, "t-1", mode) == "deleted PAY-1"
    assert invoke(agent, DANA, "t-1", mode) == "deleted PAY-2"


def test_without_a_thread_the_session_is_the_run(mode: str) -> None:
    agent = turns(limited(), [delete(1), delete(2)], saver=False)
    assert invoke(agent, DANA, None, mode) == "deleted PAY-1"
    assert invoke(agent, DANA, None, mode) == "deleted PAY-2"


def test_a_session_callable_names_the_conversation(mode: str) -> None:
    def ticket(runtime: Any) -> str:
        return "ticket-7"  # the application's own conversation id, whatever the thread

    agent = turns(limited(session=ticket), [delete(1), delete(2)])
    assert invoke(agent, DANA, "t-1", mode) == "deleted PAY-1"
    assert "limit_exceeded" in invoke(agent, DANA, "t-2", mode)


def test_a_session_callable_that_fails_refuses(mode: str) -> None:
    def broken(runtime: Any) -> str:
        raise LookupError("no ticket")

    agent = turns(limited(session=broken), [delete(1)])
    out = invoke(agent, DANA, "t-1", mode)
    assert "check_error" in out
    assert "no ticket" not in out


# Built, not called.


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"engine": object()}, TypeError, "permission engine"),
        ({"engine": Toolpass}, TypeError, "permission engine"),
        ({"rules": {"delete_issue": Rule("jira", "DELETE", "issue:{key!r}")}}, ValueError, "plain"),
        ({"rules": {"delete_issue": ("jira", "", "issue:{key}")}}, TypeError, "action"),
        (
            {"rules": {"delete_issue": DELETE, ("close_issue", "delete_issue"): DELETE}},
            ValueError,
            "two rules",
        ),
        ({"rules": [("delete_issue", DELETE)]}, TypeError, "rules map"),
        ({"session": "thread"}, TypeError, "session"),
        ({"user": ""}, TypeError, "user"),
        ({"on_refuse": "text"}, TypeError, "on_refuse"),
        ({"strict": "yes"}, TypeError, "strict"),
        ({"toolkit": {}}, TypeError, "toolkit"),
        ({"stirct": True}, TypeError, "stirct"),
    ],
)
def test_a_bad_option_is_an_error_when_built(
    options: dict[str, Any], error: type, match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    with pytest.raises(error, match=match):
        ToolpassMiddleware(**options)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TOOLPASS_TEST_TOKEN", "ghp_" + "0" * 36)
    with Toolpass(
        [
            {
                "id": "github",
                "integration": "github",
                "url": "http://127.0.0.1:9",
                "token": "env:TOOLPASS_TEST_TOKEN",
                "identity": {"mode": "users", "users": {DANA: "dana"}},
            }
        ]
    ) as tp:
        yield tp


def test_a_connection_or_action_the_engine_lacks_is_an_error_when_built(engine: Any) -> None:
    with pytest.raises(ValueError, match=r"no connection 'gihtub' \(it has: github\)"):
        ToolpassMiddleware(engine, {"open_pr": Rule("gihtub", "pr.create", "repo:{repo}")})
    with pytest.raises(ValueError, match=r"'github' has no action 'pr\.craete'"):
        ToolpassMiddleware(engine, {"open_pr": Rule("github", "pr.craete", "repo:{repo}")})
    ToolpassMiddleware(engine, {"open_pr": Rule("github", "pr.create", "repo:{repo}")})


def test_tool_node_checks_the_rules_against_its_tools() -> None:
    tools = Tools().all()
    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        ToolpassMiddleware(ScriptedEngine(), {"delete_isue": DELETE}).tool_node(tools)
    wrong = Rule("jira-main", "DELETE_ISSUES", "issue:{issue}")
    with pytest.raises(ValueError, match="names issue, which the tool does not take"):
        ToolpassMiddleware(ScriptedEngine(), {"delete_issue": wrong}).tool_node(tools)
    with pytest.raises(TypeError):
        ToolpassMiddleware(ScriptedEngine()).tool_node(tools, handle_tool_erors=True)
    ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE}).tool_node(tools)


def test_create_agent_warns_of_a_rule_for_a_tool_it_lacks_before_any_tool_runs(mode: str) -> None:
    guard = ToolpassMiddleware(ScriptedEngine(MAY_DELETE), {"delete_isue": DELETE})
    agent = turns(guard, [delete(1)], saver=False)
    with pytest.warns(UserWarning, match="tools the agent does not have: delete_isue"):
        invoke(agent, DANA, None, mode)


def test_explain_lists_each_tool_its_rule_and_the_unchecked_ones() -> None:
    guard = ToolpassMiddleware(ScriptedEngine(), {("delete_issue", "close_issue"): DELETE})
    assert "not known until" not in str(guard.guard.explain())
    assert "tools known only as the agent runs" in str(guard.guard.explain())
    guard.tool_node(Tools().all())
    explained = guard.guard.explain()
    assert explained.unchecked == ["assign_issue", "explode", "whoami"]
    assert explained.problems == ()
    text = str(explained)
    assert "delete_issue  jira-main DELETE_ISSUES issue:{key}" in text
    assert "whoami        UNCHECKED (no rule)" in text
    strict = ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE}, strict=True)
    strict.tool_node(Tools().all())
    assert "whoami        refused (strict, no rule)" in str(strict.guard.explain())


def test_no_warning_for_a_well_built_agent(mode: str, recwarn: pytest.WarningsRecorder) -> None:
    agent = turns(limited(), [delete(1)], saver=False)
    assert invoke(agent, DANA, None, mode) == "deleted PAY-1"
    assert [str(w.message) for w in recwarn if "toolpass" in str(w.message)] == []


def test_on_refuse_none_ends_the_run() -> None:
    guard = ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=None)
    agent = turns(guard, [delete(1)], saver=False)
    with pytest.raises(ToolRefused):
        invoke(agent, ERIN, None, "sync")
