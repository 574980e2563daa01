"""``secured_tool(..., as_tool=langchain_core.tools.tool)``: a LangChain tool with every
toolpass check inside, through ``create_agent``'s real loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DANA_MAY_DELETE_PAY_1, ERIN, Context, scripted
from toolpass import AuditEvent, Session, Toolkit, permission_check, secured_tool
from toolpass.langchain import ToolpassMiddleware


def tools(engine: Any, ran: list[str], events: list[AuditEvent]) -> list[BaseTool]:
    kit = Toolkit(audit=[events.append], credentials={"jira": "jira-token-123"})
    check = permission_check(engine, "jira-main", "DELETE_ISSUES", "issue:{key}")

    @secured_tool(toolkit=kit, effect="destructive", authorize=check, as_tool=tool)
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return f"deleted {key}"

    @secured_tool(toolkit=kit, effect="destructive", authorize=check, as_tool=tool)
    async def adelete_issue(key: str) -> str:
        """Delete an issue, asynchronously."""
        ran.append(key)
        return f"deleted {key}"

    @secured_tool(
        toolkit=kit, effect="read", credential="jira", scope={"key": "PAY-*"}, as_tool=tool
    )
    def read_issue(key: str, *, credential: str) -> str:
        """Read an issue."""
        ran.append(key)
        return f"read {key} with a token of {len(credential)} characters"

    return [delete_issue, adelete_issue, read_issue]


def run(agent: Any, user: str | None, mode: str) -> list[ToolMessage]:
    go = {"messages": [HumanMessage("go")]}
    if mode == "sync":
        state = agent.invoke(go, context=Context(user_id=user))
    else:
        state = asyncio.run(agent.ainvoke(go, context=Context(user_id=user)))
    assert state["messages"][-1].content == "done"
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def test_the_tools_are_langchain_tools_with_their_signature() -> None:
    delete, adelete, read = tools(ScriptedEngine(), [], [])
    assert all(isinstance(t, BaseTool) for t in (delete, adelete, read))
    assert delete.name == "delete_issue"
    assert delete.description == "Delete an issue."
    assert getattr(adelete, "coroutine", None) is not None
    assert list(read.args) == ["key"]  # the credential is toolpass's to give, not the model's


@pytest.mark.parametrize(("mode", "name"), [("sync", "delete_issue"), ("async", "adelete_issue")])
def test_every_check_inside_through_the_real_loop(mode: str, name: str) -> None:
    engine = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    ran: list[str] = []
    events: list[AuditEvent] = []
    script = [Call(name, {"key": "PAY-1"}), Call("read_issue", {"key": "OPS-1"})]

    def agent() -> Any:
        # The middleware, with no rule, gives the tools their session for the run's user.
        return create_agent(
            scripted(script),
            tools=tools(engine, ran, events),
            middleware=[ToolpassMiddleware(engine)],
            context_schema=Context,
        )

    ok, out_of_scope = run(agent(), DANA, mode)
    assert ok.content == "deleted PAY-1"
    assert "outside what this tool may touch" in out_of_scope.content
    refused, _ = run(agent(), ERIN, mode)
    assert f"may not call {name} (not granted)" in refused.content  # the reason, as the result
    assert refused.content == events[-2].message  # the model reads the refusal's own message
    assert ran == ["PAY-1"]
    assert [(e.tool, e.user, e.code) for e in events] == [
        (name, DANA, None),
        ("read_issue", DANA, "out_of_scope"),
        (name, ERIN, "not_authorized"),
        ("read_issue", ERIN, "out_of_scope"),
    ]


def test_a_credential_comes_from_toolpass_never_from_the_model() -> None:
    ran: list[str] = []
    agent = create_agent(
        scripted([Call("read_issue", {"key": "PAY-7", "credential": "stolen"})]),
        tools=tools(ScriptedEngine(), ran, []),
        middleware=[ToolpassMiddleware(ScriptedEngine())],
        context_schema=Context,
    )
    [out] = run(agent, DANA, "sync")
    assert out.content == "read PAY-7 with a token of 14 characters"


def test_without_the_middleware_the_application_opens_the_session() -> None:
    engine = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    ran: list[str] = []
    script = [Call("delete_issue", {"key": "PAY-1"})]

    def agent() -> Any:
        return create_agent(scripted(script), tools=tools(engine, ran, []), context_schema=Context)

    [nobody] = run(agent(), None, "sync")
    assert "No user session is active" in nobody.content  # the result, not a crashed run
    with Session(DANA).active():
        [ok] = run(agent(), None, "sync")
    assert ok.content == "deleted PAY-1"
    assert ran == ["PAY-1"]
