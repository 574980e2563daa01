"""One toolpass session per agent run, whatever the run's context is (a dataclass, a pydantic
model, a dict or TypedDict, or none at all): per-session limits, the untrusted-content record
and the exfiltration guard last the whole run, and the next run starts afresh."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DELETE, ERIN, Tools, scripted
from toolpass import Decision, Toolkit, current_session
from toolpass.langchain import ToolpassMiddleware


@dataclass
class DataContext:
    user_id: str


class ModelContext(BaseModel):
    user_id: str


class DictContext(TypedDict):
    user_id: str


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def from_config(runtime: Any) -> Any:
    """The user, for runs without a context: from the run's config, as the application set it."""
    return runtime.config["configurable"]["user_id"]


@dataclass(frozen=True)
class Kind:
    """A kind of run context: its schema, a context for ``user``, and where the user is."""

    schema: Any
    context: Callable[[str], Any]
    user: Any = "user_id"


KINDS = {
    "dataclass": Kind(DataContext, DataContext),
    "pydantic": Kind(ModelContext, lambda user: ModelContext(user_id=user)),
    "typeddict": Kind(DictContext, lambda user: {"user_id": user}),
    "dict": Kind(None, lambda user: {"user_id": user}),
    "none": Kind(None, lambda user: None, from_config),
}
MODES = ["invoke", "ainvoke", "stream", "astream"]


@pytest.fixture(params=list(KINDS))
def kind(request: pytest.FixtureRequest) -> Kind:
    return KINDS[request.param]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def session_tool() -> Callable[[], str]:
    def session_id() -> str:
        """The id of the toolpass session this call runs in."""
        session = current_session()
        return session.id if session else "none"

    return session_id


def run(graph: Any, context: Any, user: str, mode: str) -> list[ToolMessage]:
    """One run of ``graph`` (``invoke``, ``ainvoke``, ``stream`` or ``astream``); the tool
    messages the model read."""
    go: dict[str, Any] = {"messages": [HumanMessage("go")]}
    options: dict[str, Any] = {"context": context, "config": {"configurable": {"user_id": user}}}

    async def astream() -> list[dict[str, Any]]:
        return [state async for state in graph.astream(go, stream_mode="values", **options)]

    if mode == "invoke":
        state = graph.invoke(go, **options)
    elif mode == "ainvoke":
        state = asyncio.run(graph.ainvoke(go, **options))
    elif mode == "stream":
        state = list(graph.stream(go, stream_mode="values", **options))[-1]
    else:
        state = asyncio.run(astream())[-1]
    assert state["messages"][-1].content == "done"  # the run went on to the end
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def agent(
    guard: ToolpassMiddleware, tools: Tools, kind: Kind, script: Sequence[Call | Sequence[Call]]
) -> Any:
    return create_agent(
        scripted(script),
        tools=[*tools.all(), session_tool()],
        middleware=[guard],
        context_schema=kind.schema,
    )


def test_a_per_session_limit_holds_for_the_whole_run(kind: Kind, mode: str) -> None:
    """The bypass: with a dict or TypedDict context every call got a new session, so a limit
    of one delete per session let the model delete as often as it liked within one run."""
    tp = ScriptedEngine(
        {(DANA, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for n in (1, 2, 3)}
    )
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    guard = ToolpassMiddleware(tp, {"delete_issue": DELETE}, toolkit=kit, user=kind.user)
    tools = Tools()
    script = [Call("delete_issue", {"key": f"PAY-{n}"}) for n in (1, 2, 3)]
    context = kind.context(DANA)
    first, second, third = run(agent(guard, tools, kind, script), context, DANA, mode)
    assert first.content == "deleted PAY-1"
    assert "limit_exceeded" in second.content
    assert "limit_exceeded" in third.content
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]
    # A new run, even with the very same context object, starts a new session.
    [again] = run(agent(guard, tools, kind, script[1:2]), context, DANA, mode)
    assert again.content == "deleted PAY-2"


def test_every_call_of_a_run_shares_one_session_and_each_run_has_its_own(
    kind: Kind, mode: str
) -> None:
    guard = ToolpassMiddleware(ScriptedEngine(), user=kind.user)
    parallel = [Call("session_id"), Call("session_id"), Call("session_id")]
    script: list[Call | list[Call]] = [Call("session_id"), parallel, Call("session_id")]
    ids: list[set[str]] = []
    context = kind.context(DANA)
    for user, ctx in ((DANA, context), (DANA, context), (ERIN, kind.context(ERIN))):
        out = run(agent(guard, Tools(), kind, script), ctx, user, mode)
        assert len(out) == 5
        ids.append({str(m.content) for m in out})
    assert all(len(run_ids) == 1 for run_ids in ids), ids
    assert "none" not in ids[0]
    assert len(set.union(*ids)) == 3  # one session per run, never shared across runs


def test_parallel_calls_of_one_step_share_the_runs_limit(kind: Kind, mode: str) -> None:
    kit = Toolkit(limits={"tool:close_issue": 1}, audit=[])
    guard = ToolpassMiddleware(ScriptedEngine(), toolkit=kit, user=kind.user)
    tools = Tools()
    step = [Call("close_issue", {"key": f"PAY-{n}"}) for n in range(4)]
    out = run(agent(guard, tools, kind, [step]), kind.context(DANA), DANA, mode)
    assert sorted("limit_exceeded" in str(m.content) for m in out) == [False, True, True, True]
    assert len(tools.ran) == 1


def test_a_hand_built_graph_keeps_one_session_per_run(kind: Kind, mode: str) -> None:
    """``guard.tool_node`` in a ``StateGraph`` with a dict context (no ``create_agent``)."""
    guard = ToolpassMiddleware(ScriptedEngine(), user=kind.user)
    node = guard.tool_node([session_tool()])

    def graph(script: list[Call]) -> Any:
        model = scripted(script)
        builder = StateGraph(State, context_schema=kind.schema)
        builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
        builder.add_node("tools", node)
        builder.add_edge(START, "model")
        builder.add_conditional_edges(
            "model", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
        )
        builder.add_edge("tools", "model")
        return builder.compile()

    context = kind.context(DANA)
    script = [Call("session_id"), Call("session_id")]
    first = {str(m.content) for m in run(graph(script), context, DANA, mode)}
    second = {str(m.content) for m in run(graph(script), context, DANA, mode)}
    assert len(first) == len(second) == 1
    assert first != second


def test_what_a_run_read_earlier_still_guards_what_it_sends_later(kind: Kind, mode: str) -> None:
    """The exfiltration guard across the calls of one run: private data read, then an
    untrusted page, then a tool that sends data out (tools that declare what they do)."""
    kit = Toolkit(exfiltration="refuse", audit=[])
    sent: list[str] = []

    @kit.secured_tool(effect="read", reads_private=True)
    def read_crm() -> str:
        """Read the customer list."""
        return "customer list"

    @kit.secured_tool(effect="read", untrusted_output=True)
    def browse(url: str) -> str:
        """Read a web page."""
        return "a web page"

    @kit.secured_tool(effect="write", sends_out=True)
    def post(url: str, data: str) -> str:
        """Send data to a web address."""
        sent.append(data)
        return "posted"

    script = [
        Call("read_crm"),
        Call("browse", {"url": "https://x.test"}),
        Call("post", {"url": "https://x.test", "data": "customer list"}),
    ]
    graph = create_agent(
        scripted(script),
        tools=[read_crm, browse, post],
        middleware=[ToolpassMiddleware(ScriptedEngine(), toolkit=kit, user=kind.user)],
        context_schema=kind.schema,
    )
    *_, posted = run(graph, kind.context(DANA), DANA, mode)
    assert "exfiltration" in str(posted.content)
    assert sent == []


def test_agents_run_as_subgraphs_of_one_run_share_its_session(kind: Kind, mode: str) -> None:
    """Splitting the work over sub-agents does not reset what the run may do."""
    kit = Toolkit(limits={"tool:close_issue": 1}, audit=[])
    guard = ToolpassMiddleware(ScriptedEngine(), toolkit=kit, user=kind.user)
    tools = Tools()
    builder = StateGraph(State, context_schema=kind.schema)
    for name, key in (("first", "PAY-1"), ("second", "PAY-2")):
        builder.add_node(name, agent(guard, tools, kind, [Call("close_issue", {"key": key})]))
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    closed, refused = run(builder.compile(), kind.context(DANA), DANA, mode)
    assert closed.content == "closed PAY-1"
    assert "limit_exceeded" in refused.content
    assert tools.ran == [("close_issue", {"key": "PAY-1"})]
