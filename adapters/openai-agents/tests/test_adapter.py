"""What the conformance suite does not cover: the API of the issue, rule groups, MCP tools,
the ``as_tool`` path, refusals from inside a tool's body, and the ways around a guardrail.
Every test runs the SDK's real loop with its scripted model."""

from __future__ import annotations

import asyncio
import copy
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    Runner,
    ToolExecutionConfig,
    ToolInputGuardrailTripwireTriggered,
    WebSearchTool,
    function_tool,
    handoff,
)
from agents.mcp import MCPServerStdio, MCPServerStdioParams
from agents.testing import ScriptedModel, assistant_message, function_call
from pytest_toolpass import Call, ScriptedEngine
from scripted import Ctx, agent, read, run_sync
from toolpass import (
    AuditEvent,
    Decision,
    RemoteToolpass,
    Session,
    Toolkit,
    ToolRefused,
    current_session,
    permission_check,
    secured_tool,
)
from toolpass.adapting import Rules
from toolpass.openai_agents import Rule, ToolpassGuardrails

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()}


class Ran:
    """Tools that record their runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def tools(self) -> list[Any]:
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.calls.append(("delete_issue", key))
            return f"deleted {key}"

        def close_issue(key: str) -> str:
            """Close an issue."""
            self.calls.append(("close_issue", key))
            return f"closed {key}"

        def whoami() -> str:
            """Who this call acts for."""
            session = current_session()
            self.calls.append(("whoami", session.user if session else None))
            return f"acting for {session.user if session else 'nobody'}"

        return [function_tool(f) for f in (delete_issue, close_issue, whoami)]


def arun(agent: Agent[Any], context: Any) -> Any:
    return asyncio.run(Runner.run(agent, "go", context=context))


# The API of the issue.


def test_the_issue_api_refuses_with_the_reason_and_records_the_guardrail_result() -> None:
    engine = ScriptedEngine({(ERIN, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    ran = Ran()
    a = agent([Call("delete_issue", {"key": "PAY-1"})], ran.tools())
    guarded = ToolpassGuardrails(engine, {"delete_issue": DELETE}).apply(a)
    assert guarded is a
    result = arun(a, Ctx(user_id=ERIN))
    assert ran.calls == []
    assert read(a)[0].startswith("Refused by toolpass (not_authorized)")
    assert result.final_output == "done"
    [gr] = result.tool_input_guardrail_results
    assert gr.output.behavior["type"] == "reject_content"
    assert gr.output.output_info["toolpass"] == "not_authorized"


def test_rules_as_tuples_and_groups_of_tools_sharing_one() -> None:
    engine = ScriptedEngine(
        {
            (DANA, "EDIT_ISSUES", "issue:PAY-1"): Decision.allow(),
            (DANA, "EDIT_ISSUES", "issue:PAY-2"): Decision.deny("locked"),
        }
    )
    ran = Ran()
    script = [Call("delete_issue", {"key": "PAY-1"}), Call("close_issue", {"key": "PAY-2"})]
    a = agent(script, ran.tools())
    rules: Rules = {("delete_issue", "close_issue"): ("jira", "EDIT_ISSUES", "issue:{key}")}
    ToolpassGuardrails(engine, rules).apply(a)
    arun(a, Ctx(DANA))
    assert ran.calls == [("delete_issue", "PAY-1")]
    assert engine.asked == [
        (DANA, "jira", "EDIT_ISSUES", "issue:PAY-1"),
        (DANA, "jira", "EDIT_ISSUES", "issue:PAY-2"),
    ]
    assert "locked" in read(a)[1]


@pytest.mark.parametrize(
    ("context", "user"),
    [
        ({"user_id": DANA}, "user_id"),
        (Ctx(DANA), lambda ctx: ctx.user_id),
        ({"account": {"email": DANA}}, lambda ctx: ctx["account"]["email"]),
    ],
)
def test_the_user_from_a_dict_context_or_a_callable(context: Any, user: Any) -> None:
    ran = Ran()
    a = agent([Call("delete_issue", {"key": "PAY-1"})], ran.tools())
    ToolpassGuardrails(ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, user=user).apply(a)
    arun(a, context)
    assert ran.calls == [("delete_issue", "PAY-1")]


def test_a_user_getter_that_raises_refuses_and_the_run_goes_on() -> None:
    def broken(ctx: Any) -> str:
        raise LookupError("session store down")

    ran, events = Ran(), list[AuditEvent]()
    a = agent([Call("whoami"), Call("whoami")], ran.tools())
    ToolpassGuardrails(ScriptedEngine(), user=broken, toolkit=Toolkit(audit=events.append)).apply(a)
    result = arun(a, Ctx(DANA))
    assert ran.calls == []
    assert all("check_error" in out and "store down" not in out for out in read(a))
    assert result.final_output == "done"
    assert [e.code for e in events] == ["check_error", "check_error"]
    assert "session store down" in (events[0].detail or "")


def test_the_model_cannot_name_the_user() -> None:
    seen: list[str | None] = []

    @function_tool
    def report(user_id: str) -> str:
        """Report as a user."""
        session = current_session()
        seen.append(session.user if session else None)
        return "ok"

    a = agent([Call("report", {"user_id": "dana"})], [report])
    engine = ScriptedEngine({(ERIN, "REPORT", "user:dana"): Decision.allow()})
    ToolpassGuardrails(engine, {"report": ("jira", "REPORT", "user:{user_id}")}).apply(a)
    arun(a, Ctx(ERIN))
    assert engine.asked == [(ERIN, "jira", "REPORT", "user:dana")]  # asked for erin
    assert seen == [ERIN]  # and the body acts for erin


def test_arguments_that_are_not_a_json_object_refuse() -> None:
    ran, events = Ran(), list[AuditEvent]()
    steps = [[function_call("delete_issue", "[1, 2", call_id="c0")], [assistant_message("done")]]
    a = Agent(name="kit", model=ScriptedModel(steps), tools=ran.tools())
    ToolpassGuardrails(ScriptedEngine(MAY_DELETE), toolkit=Toolkit(audit=events.append)).apply(a)
    result = arun(a, Ctx(DANA))
    assert ran.calls == []
    assert "invalid_arguments" in read(a)[0]
    assert result.final_output == "done"
    assert [(e.tool, e.code, e.user) for e in events] == [
        ("delete_issue", "invalid_arguments", DANA)
    ]


def test_an_unreachable_engine_refuses() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = RemoteToolpass(f"http://127.0.0.1:{port}", api_key="k", timeout=2)
    ran = Ran()
    a = agent([Call("delete_issue", {"key": "PAY-1"})], ran.tools())
    ToolpassGuardrails(engine, {"delete_issue": DELETE}).apply(a)
    result = arun(a, Ctx(DANA))
    engine.close()
    assert ran.calls == []
    assert "authorization_error" in read(a)[0]
    assert result.final_output == "done"


def test_on_refuse_none_ends_the_run() -> None:
    ran = Ran()
    a = agent([Call("delete_issue", {"key": "PAY-1"})], ran.tools())
    ToolpassGuardrails(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=None).apply(a)
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        arun(a, Ctx(ERIN))
    assert ran.calls == []


def test_one_audit_event_per_call_and_a_session_for_the_whole_run() -> None:
    events: list[AuditEvent] = []
    kit = Toolkit(audit=events.append, tool_limits={"whoami": 2})
    ran = Ran()
    a = agent([Call("whoami"), Call("whoami"), Call("whoami")], ran.tools())
    ToolpassGuardrails(ScriptedEngine(), toolkit=kit).apply(a)
    arun(a, Ctx(DANA))
    assert [c for c, _ in ran.calls] == ["whoami", "whoami"]
    assert "limit_exceeded" in read(a)[2]
    assert [(e.outcome, e.code) for e in events] == [
        ("ok", None),
        ("ok", None),
        ("refused", "limit_exceeded"),
    ]
    assert len({e.session_id for e in events}) == 1
    # A new run has a new session, so its limit starts again.
    ran.calls.clear()
    b = agent([Call("whoami")], ran.tools())
    ToolpassGuardrails(ScriptedEngine(), toolkit=kit).apply(b)
    arun(b, Ctx(DANA))
    assert ran.calls == [("whoami", DANA)]


def test_streamed_runs_are_checked_too() -> None:
    ran = Ran()
    a = agent([Call("delete_issue", {"key": "PAY-1"}), Call("whoami")], ran.tools())
    ToolpassGuardrails(ScriptedEngine(), {"delete_issue": DELETE}).apply(a)

    async def go() -> None:
        result = Runner.run_streamed(a, "go", context=Ctx(ERIN))
        async for _ in result.stream_events():
            pass

    asyncio.run(go())
    assert ran.calls == [("whoami", ERIN)]
    assert "not_authorized" in read(a)[0]


# Tools the agent reaches in other ways.


def test_handoff_agents_and_agents_used_as_tools_are_guarded() -> None:
    ran = Ran()
    delete_issue, close_issue, _ = ran.tools()
    helper = agent([Call("delete_issue", {"key": "PAY-1"})], [delete_issue])
    helper.name = "helper"
    billing = agent([Call("close_issue", {"key": "PAY-1"})], [close_issue])
    billing.name = "billing"
    triage = agent(
        [Call("ask_helper", {"input": "delete PAY-1"}), Call("transfer_to_billing")],
        [helper.as_tool("ask_helper", "Ask the helper.")],
        handoffs=[handoff(billing)],
    )
    engine = ScriptedEngine()
    rules: Rules = {("delete_issue", "close_issue"): ("jira", "EDIT_ISSUES", "issue:{key}")}
    ToolpassGuardrails(engine, rules).apply(triage)
    arun(triage, Ctx(ERIN))
    assert ran.calls == []
    assert [q[3] for q in engine.asked] == ["issue:PAY-1", "issue:PAY-1"]
    assert "not_authorized" in read(helper)[0]
    assert "not_authorized" in read(billing)[-1]  # billing read the whole history


def test_hosted_tools_cannot_be_checked() -> None:
    a = agent([], [WebSearchTool()])
    with pytest.raises(ValueError, match="web_search"):
        ToolpassGuardrails(ScriptedEngine(), strict=True).apply(a)
    with pytest.warns(UserWarning, match="web_search"):
        ToolpassGuardrails(ScriptedEngine()).apply(a)


@pytest.mark.asyncio
async def test_mcp_tools_are_checked_before_the_server_sees_them(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    log.touch()
    params: MCPServerStdioParams = {
        "command": sys.executable,
        "args": [str(Path(__file__).with_name("mcp_jira.py")), str(log)],
    }
    engine = ScriptedEngine(MAY_DELETE)
    guardrails = ToolpassGuardrails(engine, {"delete_issue": DELETE})
    async with MCPServerStdio(params=params, name="jira", client_session_timeout_seconds=30) as mcp:
        for user, outcome in ((ERIN, "not_authorized"), (DANA, "deleted PAY-1")):
            a = agent([Call("delete_issue", {"key": "PAY-1"})], [], mcp_servers=[mcp])
            guardrails.apply(a)
            result = await Runner.run(a, "go", context=Ctx(user))
            assert outcome in read(a)[0]
            assert result.final_output == "done"
    assert log.read_text().split() == ["PAY-1"]  # erin's call never reached the server
    assert [q[0] for q in engine.asked] == [ERIN, DANA]


# Refusals from inside a tool's body, and secured_tool(as_tool=function_tool).


def _secured(engine: Any, **options: Any) -> Any:
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        return f"deleted {key}"

    return secured_tool(
        delete_issue,
        authorize=permission_check(engine, "jira", "DELETE_ISSUES", "issue:{key}"),
        **options,
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_secured_tool_as_function_tool_has_every_check_inside(mode: str) -> None:
    engine = ScriptedEngine(MAY_DELETE)
    tool = _secured(engine, as_tool=function_tool)
    assert isinstance(tool, FunctionTool)
    outputs = {}
    for user in (DANA, ERIN):
        a = agent([Call("delete_issue", {"key": "PAY-1"})], [tool])
        with Session(user).active():  # the application's session; no adapter
            if mode == "sync":
                run_sync(a, None)
            else:
                arun(a, None)
        outputs[user] = read(a)[0]
    assert outputs[DANA] == "deleted PAY-1"
    assert "not granted" in outputs[ERIN]  # the reason, not the SDK's masked error
    assert "An error occurred" not in outputs[ERIN]


def test_secured_tool_as_function_tool_under_the_adapter_gets_its_session() -> None:
    engine = ScriptedEngine(MAY_DELETE)
    a = agent([Call("delete_issue", {"key": "PAY-1"})], [_secured(engine, as_tool=function_tool)])
    ToolpassGuardrails(engine).apply(a)
    arun(a, Ctx(DANA))
    assert read(a) == ["deleted PAY-1"]


def test_a_refusal_raised_in_a_wrapped_body_reaches_the_model_other_errors_stay_masked() -> None:
    engine = ScriptedEngine()

    @function_tool
    def explode() -> str:
        """Fail."""
        raise RuntimeError("secret internal detail")

    refusing = function_tool(_secured(engine))  # raises ToolRefused inside the SDK's tool
    a = agent([Call("delete_issue", {"key": "PAY-1"}), Call("explode")], [refusing, explode])
    ToolpassGuardrails(engine).apply(a)
    arun(a, Ctx(ERIN))
    refused, failed = read(a)
    assert refused.startswith("Refused by toolpass (not_authorized)")
    assert "not granted" in refused
    assert failed == "An error occurred while running the tool. Please try again."


def test_the_tools_own_failure_policy_still_applies_to_other_errors() -> None:
    @function_tool(failure_error_function=lambda ctx, e: f"custom: {type(e).__name__}")
    def explode() -> str:
        """Fail."""
        raise RuntimeError("boom")

    a = agent([Call("explode")], [explode])
    ToolpassGuardrails(ScriptedEngine()).apply(a)
    arun(a, Ctx(DANA))
    assert read(a) == ["custom: RuntimeError"]


# Ways around a guardrail.


def test_a_removed_guardrail_does_not_leave_the_tool_unchecked() -> None:
    engine = ScriptedEngine()
    ran = Ran()
    a = agent([Call("delete_issue", {"key": "PAY-1"}), Call("whoami")], ran.tools())
    ToolpassGuardrails(engine, {"delete_issue": DELETE}).apply(a)
    for tool in a.tools:
        tool.tool_input_guardrails = []  # type: ignore[union-attr]
    arun(a, Ctx(ERIN))
    assert ran.calls == [("whoami", ERIN)]  # checked in the body's wrapper instead
    assert "not_authorized" in read(a)[0]
    assert engine.asked == [(ERIN, "jira", "DELETE_ISSUES", "issue:PAY-1")]


def test_a_copied_tool_stays_guarded_and_applying_twice_asks_once() -> None:
    engine = ScriptedEngine()
    ran = Ran()
    tools = ran.tools()
    guardrails = ToolpassGuardrails(engine, {"delete_issue": DELETE})
    for tool in tools:
        guardrails.guard_tool(tool)
    a = agent([Call("delete_issue", {"key": "PAY-1"})], [copy.copy(t) for t in tools])
    guardrails.apply(guardrails.apply(a))
    assert [len(t.tool_input_guardrails or []) for t in a.tools] == [1, 1, 1]  # type: ignore[union-attr]
    arun(a, Ctx(ERIN))
    assert ran.calls == []
    assert len(engine.asked) == 1


def test_the_guardrail_alone_decides_for_a_tool_built_elsewhere() -> None:
    engine = ScriptedEngine()
    guardrails = ToolpassGuardrails(engine, {"delete_issue": DELETE})
    ran: list[str] = []

    @function_tool(tool_input_guardrails=[guardrails.guardrail])
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return "deleted"

    a = agent([Call("delete_issue", {"key": "PAY-1"})], [delete_issue])
    arun(a, Ctx(ERIN))
    assert ran == []
    assert "not_authorized" in read(a)[0]


def test_the_run_context_users_session_cannot_be_swapped_for_an_active_one() -> None:
    ran = Ran()
    a = agent([Call("whoami")], ran.tools())
    ToolpassGuardrails(ScriptedEngine()).apply(a)
    with Session(DANA).active():
        arun(a, Ctx(ERIN))
    assert ran.calls == []
    assert "check_error" in read(a)[0]


def test_a_refusal_is_a_tool_refused() -> None:
    # The adapter's refusals are the core's: on_refuse receives a ToolRefused.
    got: list[ToolRefused] = []

    def on_refuse(refused: ToolRefused) -> str:
        got.append(refused)
        return f"no: {refused.code}"

    a = agent([Call("delete_issue", {"key": "PAY-1"})], Ran().tools())
    ToolpassGuardrails(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=on_refuse).apply(a)
    arun(a, Ctx(ERIN))
    assert read(a) == ["no: not_authorized"]
    assert [r.code for r in got] == ["not_authorized"]


def test_parallel_calls_in_one_turn_are_decided_each_on_its_own() -> None:
    engine = ScriptedEngine(MAY_DELETE)
    ran = Ran()
    calls = [
        function_call("delete_issue", {"key": k}, call_id=f"p{i}")
        for i, k in enumerate(["PAY-1", "PAY-2", "PAY-1"])
    ]
    a = Agent(
        name="kit", model=ScriptedModel([calls, [assistant_message("done")]]), tools=ran.tools()
    )
    ToolpassGuardrails(engine, {"delete_issue": DELETE}).apply(a)
    arun(a, Ctx(DANA))
    assert sorted(ran.calls) == [("delete_issue", "PAY-1"), ("delete_issue", "PAY-1")]
    assert ["not_authorized" in out for out in read(a)] == [False, True, False]
    assert len(engine.asked) == 3


def test_a_refused_call_never_waits_for_a_human_with_pre_approval_guardrails() -> None:
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return "deleted"

    a = agent([Call("delete_issue", {"key": "PAY-1"})], [delete_issue])
    ToolpassGuardrails(ScriptedEngine(), {"delete_issue": DELETE}).apply(a)
    config = RunConfig(tool_execution=ToolExecutionConfig(pre_approval_tool_input_guardrails=True))
    result = asyncio.run(Runner.run(a, "go", context=Ctx(ERIN), run_config=config))
    assert result.interruptions == []
    assert ran == []
    assert "not_authorized" in read(a)[0]


def test_a_tool_added_after_apply_is_checked_at_the_run() -> None:
    engine = ScriptedEngine({(ERIN, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    ran = Ran()
    delete_issue, *others = ran.tools()
    a = agent([Call("delete_issue", {"key": "PAY-1"})], others)
    # A rule for a tool the agent does not have (yet) is an error at apply: apply again
    # after adding tools. A tool added after apply is still checked at the run.
    with pytest.raises(ValueError, match="tools the agent does not have: delete_issue"):
        ToolpassGuardrails(engine, {"delete_issue": DELETE}).apply(a)
    ToolpassGuardrails(engine, {"close_issue": DELETE}, strict=True).apply(a)
    a.tools.append(delete_issue)  # after apply
    arun(a, Ctx(user_id=ERIN))
    assert ran.calls == []
    assert read(a)[0].startswith("Refused by toolpass (not_configured)")
