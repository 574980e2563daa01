"""``guard.tool_node(tools)``: a checked LangGraph ``ToolNode`` in a graph built by hand, with
the user in the graph's ``context_schema``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DANA_MAY_DELETE_PAY_1, DELETE, ERIN, Context, Tools, scripted
from toolpass.langchain import ToolpassMiddleware


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def graph(node: ToolNode, script: list[Call]) -> Any:
    model = scripted(script)

    def call_model(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(State, context_schema=Context)
    builder.add_node("model", call_model)
    builder.add_node("tools", node)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile()


def run(app: Any, user: str | None, mode: str) -> list[ToolMessage]:
    go = {"messages": [HumanMessage("go")]}
    if mode == "sync":
        state = app.invoke(go, context=Context(user_id=user))
    else:
        state = asyncio.run(app.ainvoke(go, context=Context(user_id=user)))
    assert state["messages"][-1].content == "done"
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_checked_tool_node_in_a_hand_built_graph(mode: str) -> None:
    tp = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    guard = ToolpassMiddleware(tp, {"delete_issue": DELETE})
    script = [Call("delete_issue", {"key": "PAY-1"}), Call("whoami")]
    tools = Tools()
    node = guard.tool_node(tools.all())
    assert isinstance(node, ToolNode)
    ok, who = run(graph(node, script), DANA, mode)
    assert ok.content == "deleted PAY-1"
    assert who.content == f"acting for {DANA}"

    tools = Tools()
    refused, who = run(graph(guard.tool_node(tools.all()), script), ERIN, mode)
    assert refused.status == "error"
    assert "not_authorized" in refused.content
    assert who.content == f"acting for {ERIN}"
    assert [t for t, _ in tools.ran] == ["whoami"]

    tools = Tools()
    refused, _ = run(graph(guard.tool_node(tools.all()), script), None, mode)
    assert "no_session" in refused.content
    assert tools.ran == []


def test_the_tool_nodes_own_options_pass_through(mode: str) -> None:
    guard = ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE})
    node = guard.tool_node(
        Tools().all(), handle_tool_errors=lambda e: f"failed: {type(e).__name__}"
    )
    failed, refused = run(
        graph(node, [Call("explode"), Call("delete_issue", {"key": "PAY-1"})]), DANA, mode
    )
    assert failed.content == "failed: ValueError"  # the node's own handling of tool errors
    assert "not_authorized" in refused.content
