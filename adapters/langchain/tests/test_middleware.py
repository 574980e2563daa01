"""ToolpassMiddleware through ``create_agent``'s real loop: the issue's API, tool groups, where
the user comes from, sessions per run, parallel calls, audit, errors, and what could get
around the hook."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
import toolpass.adapting
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import HumanMessage, ToolMessage
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DANA_MAY_DELETE_PAY_1, DELETE, ERIN, Context, Tools, scripted
from toolpass import AuditEvent, Decision, RemoteToolpass, Session, Toolkit
from toolpass.langchain import Rule, ToolpassMiddleware, refusal_text


def agent(
    guard: AgentMiddleware[Any, Any, Any] | None,
    tools: Tools,
    script: Sequence[Call | Sequence[Call]],
    *,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    context_schema: Any = Context,
) -> Any:
    return create_agent(
        scripted(script),
        tools=tools.all(),
        middleware=[*middleware, *([guard] if guard else [])],
        context_schema=context_schema,
    )


def run(graph: Any, context: Any, mode: str = "sync") -> list[ToolMessage]:
    state: dict[str, Any]
    if mode == "sync":
        state = graph.invoke({"messages": [HumanMessage("go")]}, context=context)
    else:
        state = asyncio.run(graph.ainvoke({"messages": [HumanMessage("go")]}, context=context))
    assert state["messages"][-1].content == "done"  # the run went on to the end
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_issues_api(mode: str) -> None:
    assert Rule is toolpass.adapting.Rule
    tp = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    tools = Tools()
    guard = ToolpassMiddleware(tp, {"delete_issue": DELETE})
    graph = create_agent(
        scripted([Call("delete_issue", {"key": "PAY-1"})]),
        tools=tools.all(),
        middleware=[guard],
        context_schema=Context,
    )
    [ok] = run(graph, Context(user_id=DANA), mode)
    assert ok.content == "deleted PAY-1"
    assert ok.status == "success"

    graph = agent(guard, tools, [Call("delete_issue", {"key": "PAY-1"})])
    [refused] = run(graph, Context(user_id=ERIN), mode)
    assert refused.status == "error"
    assert refused.name == "delete_issue"
    assert refused.tool_call_id == "call_0"
    assert str(refused.content).startswith("Refused by toolpass (not_authorized)")
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]  # dana's only
    assert tp.asked == [
        (DANA, "jira-main", "DELETE_ISSUES", "issue:PAY-1"),
        (ERIN, "jira-main", "DELETE_ISSUES", "issue:PAY-1"),
    ]


def test_tools_sharing_a_rule(mode: str) -> None:
    tp = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-2"): Decision.allow()})
    tools = Tools()
    guard = ToolpassMiddleware(
        tp, {("delete_issue", "close_issue"): ("jira-main", "DELETE_ISSUES", "issue:{key}")}
    )
    script = [Call("delete_issue", {"key": "PAY-1"}), Call("close_issue", {"key": "PAY-2"})]
    refused, ok = run(agent(guard, tools, script), Context(DANA), mode)
    assert "not_authorized" in refused.content
    assert ok.content == "closed PAY-2"
    assert tools.ran == [("close_issue", {"key": "PAY-2"})]
    assert [a[3] for a in tp.asked] == ["issue:PAY-1", "issue:PAY-2"]


def test_the_user_comes_from_the_context_never_from_the_models_arguments(mode: str) -> None:
    tp = ScriptedEngine({(ERIN, "ASSIGN_ISSUES", "issue:PAY-1"): Decision.allow()})
    tools = Tools()
    guard = ToolpassMiddleware(tp, {"assign_issue": ("jira-main", "ASSIGN_ISSUES", "issue:{key}")})
    script = [Call("assign_issue", {"key": "PAY-1", "user_id": ERIN}), Call("whoami")]
    refused, who = run(agent(guard, tools, script), Context(user_id=DANA), mode)
    assert "not_authorized" in refused.content  # asked for dana, whom the model cannot change
    assert tp.asked == [(DANA, "jira-main", "ASSIGN_ISSUES", "issue:PAY-1")]
    assert who.content == f"acting for {DANA}"


@dataclass
class Account:
    email: str


@dataclass
class AppContext:
    account: Account
    tenant: str = "acme"


class DictContext(TypedDict):
    user_id: str


@pytest.mark.parametrize(
    ("user", "schema", "context"),
    [
        ("email", Account, Account(DANA)),
        (lambda runtime: runtime.context.account.email, AppContext, AppContext(Account(DANA))),
        ("user_id", DictContext, {"user_id": DANA}),
    ],
    ids=["attribute", "callable", "mapping"],
)
def test_the_application_says_where_the_user_is(user: Any, schema: Any, context: Any) -> None:
    tools = Tools()
    guard = ToolpassMiddleware(ScriptedEngine(), user=user)
    [who] = run(agent(guard, tools, [Call("whoami")], context_schema=schema), context)
    assert who.content == f"acting for {DANA}"


def _broken(runtime: Any) -> str:
    raise KeyError("token=abc123")


@pytest.mark.parametrize("user", [_broken, lambda runtime: 42, "no_such_attribute"])
def test_a_user_that_cannot_be_had_refuses(user: Any, mode: str) -> None:
    tools = Tools()
    guard = ToolpassMiddleware(ScriptedEngine(), user=user)
    [out] = run(agent(guard, tools, [Call("whoami")]), Context(DANA), mode)
    assert tools.ran == []
    assert out.status == "error"
    assert "check_error" in out.content or "no_session" in out.content
    assert "abc123" not in out.content


def test_a_session_lasts_the_run_and_no_longer() -> None:
    tools = Tools()
    kit = Toolkit(tool_limits={"whoami": 1}, audit=[])
    guard = ToolpassMiddleware(ScriptedEngine(), toolkit=kit)
    first, second = run(agent(guard, tools, [Call("whoami"), Call("whoami")]), Context(DANA))
    assert first.content == f"acting for {DANA}"
    assert "limit_exceeded" in second.content
    [again] = run(agent(guard, tools, [Call("whoami")]), Context(DANA))  # a new run
    assert again.content == f"acting for {DANA}"


def test_parallel_calls_in_one_turn_are_each_checked(mode: str) -> None:
    tp = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    tools = Tools()
    guard = ToolpassMiddleware(tp, {"delete_issue": DELETE})
    turn = [
        Call("delete_issue", {"key": "PAY-1"}),
        Call("delete_issue", {"key": "PAY-2"}),
        Call("whoami"),
    ]
    ok, refused, who = run(agent(guard, tools, [turn]), Context(DANA), mode)
    assert ok.content == "deleted PAY-1"
    assert "not_authorized" in refused.content
    assert who.content == f"acting for {DANA}"
    assert sorted(t for t, _ in tools.ran) == ["delete_issue", "whoami"]


def test_each_call_is_audited(mode: str) -> None:
    events: list[AuditEvent] = []
    tp = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    guard = ToolpassMiddleware(
        tp, {"delete_issue": DELETE}, strict=True, toolkit=Toolkit(audit=[events.append])
    )
    script = [
        Call("delete_issue", {"key": "PAY-1"}),
        Call("delete_issue", {"key": "PAY-2"}),
        Call("whoami"),
    ]
    run(agent(guard, Tools(), script), Context(DANA), mode)
    assert [(e.tool, e.user, e.outcome, e.code) for e in events] == [
        ("delete_issue", DANA, "ok", None),
        ("delete_issue", DANA, "refused", "not_authorized"),
        ("whoami", DANA, "refused", "not_configured"),
    ]
    assert events[0].arguments == {"key": "PAY-1"}


def test_a_tools_exception_is_langgraphs_to_handle_as_without_toolpass(mode: str) -> None:
    """The adapter turns refusals into messages, not tool failures: ``create_agent`` ends the
    run on a tool's exception with or without it (``ToolErrorMiddleware`` is the framework's
    way to let the model read it instead), and the audit records the error."""
    events: list[AuditEvent] = []
    for guard in (
        None,
        ToolpassMiddleware(ScriptedEngine(), toolkit=Toolkit(audit=[events.append])),
    ):
        with pytest.raises(ValueError, match="secret internal detail"):
            run(agent(guard, Tools(), [Call("explode")]), Context(DANA), mode)
    [event] = events
    assert (event.tool, event.outcome) == ("explode", "error")


def test_an_unreachable_engine_refuses(mode: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    tp = RemoteToolpass(f"http://127.0.0.1:{port}", api_key="tp_test", timeout=2)
    tools = Tools()
    guard = ToolpassMiddleware(tp, {"delete_issue": DELETE})
    try:
        [out] = run(
            agent(guard, tools, [Call("delete_issue", {"key": "PAY-1"})]), Context(DANA), mode
        )
    finally:
        tp.close()
    assert tools.ran == []
    assert out.status == "error"
    assert "authorization_error" in out.content


class Rewrite(AgentMiddleware[Any, Any, Any]):
    """A middleware that changes the call's arguments on their way to the tool."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    def _request(self, request: ToolCallRequest) -> ToolCallRequest:
        call = request.tool_call
        return request.override(tool_call={**call, "args": {**call["args"], "key": self.key}})

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        return handler(self._request(request))

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        return await handler(self._request(request))


def test_listed_last_the_guard_checks_the_call_that_runs(mode: str) -> None:
    tp = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    tools = Tools()
    guard = ToolpassMiddleware(tp, {"delete_issue": DELETE})
    graph = agent(
        guard, tools, [Call("delete_issue", {"key": "PAY-1"})], middleware=[Rewrite("ADM-9")]
    )
    [out] = run(graph, Context(DANA), mode)
    assert "not_authorized" in out.content
    assert tools.ran == []
    assert tp.asked == [(DANA, "jira-main", "DELETE_ISSUES", "issue:ADM-9")]


def test_a_middleware_listed_after_the_guard_changes_the_call_after_the_check() -> None:
    """Why the guard goes last: LangChain composes middleware first-listed outermost, so one
    listed after the guard sees (and may change) the call only once it was checked."""
    tp = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    tools = Tools()
    graph = create_agent(
        scripted([Call("delete_issue", {"key": "PAY-1"})]),
        tools=tools.all(),
        middleware=[ToolpassMiddleware(tp, {"delete_issue": DELETE}), Rewrite("ADM-9")],
        context_schema=Context,
    )
    run(graph, Context(DANA))
    assert tp.asked == [(DANA, "jira-main", "DELETE_ISSUES", "issue:PAY-1")]
    assert tools.ran == [("delete_issue", {"key": "ADM-9"})]


def test_a_tool_the_model_made_up(mode: str) -> None:
    tools = Tools()
    script = [Call("drop_database", {"name": "prod"})]
    strict = ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE}, strict=True)
    [out] = run(agent(strict, tools, script), Context(DANA), mode)
    assert "not_configured" in out.content
    lenient = ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE})
    [out] = run(agent(lenient, tools, script), Context(DANA), mode)
    assert out.status == "error"
    assert "drop_database is not a valid tool" in out.content  # LangGraph's own answer
    assert tools.ran == []


def test_on_refuse_says_what_the_model_reads(mode: str) -> None:
    script = [Call("delete_issue", {"key": "PAY-1"})]
    guard = ToolpassMiddleware(
        ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=lambda r: f"No ({r.code})."
    )
    [out] = run(agent(guard, Tools(), script), Context(DANA), mode)
    assert out.content == "No (not_authorized)."

    def broken(refused: Any) -> str:
        raise RuntimeError("oops")

    guard = ToolpassMiddleware(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=broken)
    [out] = run(agent(guard, Tools(), script), Context(DANA), mode)
    assert out.status == "error"
    assert "not_authorized" in out.content  # the reason still reaches the model


def test_a_session_the_application_opened_is_used() -> None:
    guard = ToolpassMiddleware(ScriptedEngine())
    tools = Tools()
    with Session(DANA).active():
        [who] = run(agent(guard, tools, [Call("whoami")]), Context(DANA))
        assert who.content == f"acting for {DANA}"
        [other] = run(agent(guard, tools, [Call("whoami")]), Context(ERIN))
    assert "check_error" in other.content  # the context names someone else: refused
    assert tools.ran == [("whoami", {})]


def test_bad_configuration_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="context attribute"):
        ToolpassMiddleware(ScriptedEngine(), user=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a rule is a Rule"):
        ToolpassMiddleware(ScriptedEngine(), {"delete_issue": ("jira", "DELETE_ISSUES")})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="on_refuse"):
        ToolpassMiddleware(ScriptedEngine(), on_refuse="no")  # type: ignore[arg-type]
    assert ToolpassMiddleware(ScriptedEngine()).guard.on_refuse is refusal_text
