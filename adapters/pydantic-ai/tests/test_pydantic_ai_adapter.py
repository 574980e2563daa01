"""What the conformance suite does not cover: the API of the issue, where the user comes from,
refusals raised inside a tool's body, ``secured_tool(..., as_tool=...)``, limits per run, MCP
tools, tools added per run, parallel calls, approvals, streaming runs, and the audit trail.

Every test runs Pydantic AI's real agent loop with a scripted ``FunctionModel``.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai_script import read_back, run_sync, scripted
from pytest_toolpass import ScriptedEngine
from toolpass import (
    AuditEvent,
    Decision,
    Session,
    Toolkit,
    Toolpass,
    ToolRefused,
    current_session,
)
from toolpass.pydantic_ai import Rule, ToolpassAuthorization, ToolpassToolset, tool_failed

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")
HERE = Path(__file__).resolve().parent


@dataclass
class Deps:
    user: str | None


@dataclass
class Account:
    user_id: str


class Recorder:
    """Tools that record their runs."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def delete_issue(self, key: str) -> str:
        """Delete an issue."""
        self.ran.append(("delete_issue", {"key": key}))
        return f"deleted {key}"

    def close_issue(self, key: str) -> str:
        """Close an issue."""
        self.ran.append(("close_issue", {"key": key}))
        return f"closed {key}"

    def whoami(self) -> str:
        """Who this call acts for."""
        self.ran.append(("whoami", {}))
        session = current_session()
        return f"acting for {session.user if session else 'nobody'}"


@pytest.fixture
def events() -> list[AuditEvent]:
    return []


@pytest.fixture
def kit(events: list[AuditEvent]) -> Toolkit:
    return Toolkit(audit=[events.append])


def allow(*pairs: tuple[str, str]) -> ScriptedEngine:
    return ScriptedEngine({(u, "DELETE_ISSUES", r): Decision.allow() for u, r in pairs})


# The API of the issue.


def test_the_api_of_the_issue_with_a_group_of_tools_sharing_a_rule(kit: Toolkit) -> None:
    tools = Recorder()
    engine = allow((DANA, "issue:PAY-1"))
    guard = ToolpassAuthorization(
        engine, {("delete_issue", "close_issue"): ("jira-main", "DELETE_ISSUES", "issue:{key}")}
    )
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1"}), ("close_issue", {"key": "PAY-2"})]),
        deps_type=Deps,
        tools=[tools.delete_issue, tools.close_issue],
        capabilities=[guard],
    )
    result = run_sync(agent, "go", deps=Deps(DANA))
    out = read_back(result.all_messages())
    assert out[0] == "deleted PAY-1"
    assert "not_authorized" in out[1]
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]
    assert engine.asked == [
        (DANA, "jira-main", "DELETE_ISSUES", "issue:PAY-1"),
        (DANA, "jira-main", "DELETE_ISSUES", "issue:PAY-2"),
    ]
    assert result.output == "done"


def test_the_model_reads_a_failed_tool_result_and_no_retry_is_spent() -> None:
    tools = Recorder()
    script = [("delete_issue", {"key": "PAY-1"})] * 4  # more refusals than the retry budget
    agent = Agent(
        scripted(script),
        deps_type=Deps,
        tools=[tools.delete_issue],
        retries=1,
        capabilities=[ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE})],
    )
    result = run_sync(agent, "go", deps=Deps(ERIN))
    returns = [
        part
        for message in result.all_messages()
        for part in getattr(message, "parts", [])
        if getattr(part, "part_kind", "") == "tool-return"
    ]
    assert [p.outcome for p in returns] == ["failed"] * 4
    assert all("Refused by toolpass (not_authorized)" in str(p.content) for p in returns)
    assert tools.ran == []
    assert result.output == "done"


def test_a_bad_rule_or_user_source_is_a_clear_error_at_once() -> None:
    with pytest.raises(TypeError, match="a rule is a Rule"):
        ToolpassAuthorization(ScriptedEngine(), {"delete_issue": ("jira", "DELETE")})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="user is"):
        ToolpassAuthorization(ScriptedEngine(), user=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be deferred"):
        ToolpassAuthorization(ScriptedEngine(), id="authz", defer_loading=True)


def test_an_unreachable_engine_refuses_and_the_run_goes_on(
    kit: Toolkit, events: list[AuditEvent]
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    engine = Toolpass.remote(f"http://127.0.0.1:{port}", "tp_key", timeout=2.0)
    tools = Recorder()
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1"}), ("whoami", {})]),
        deps_type=Deps,
        tools=[tools.delete_issue, tools.whoami],
        capabilities=[
            ToolpassAuthorization(
                engine, {"delete_issue": DELETE}, toolkit=Toolkit(audit=[events.append])
            )
        ],
    )
    result = run_sync(agent, "go", deps=Deps(DANA))
    out = read_back(result.all_messages())
    assert out[0].startswith('{"error":"Refused by toolpass (authorization_error)'), out
    assert out[1] == f"acting for {DANA}"
    assert tools.ran == [("whoami", {})]
    assert events[0].outcome == "refused"


# The user: from the application, never from the model.


@pytest.mark.parametrize(
    ("user", "deps"),
    [
        ("user_id", Account(DANA)),
        (lambda ctx: ctx.deps.user_id, Account(DANA)),
        ("user", {"user": DANA}),
    ],
    ids=["attribute", "callable", "mapping"],
)
def test_where_the_user_comes_from(user: Any, deps: Any) -> None:
    tools = Recorder()
    agent = Agent(
        scripted([("whoami", {})]),
        deps_type=type(deps),
        tools=[tools.whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), user=user)],
    )
    result = run_sync(agent, "go", deps=deps)
    assert read_back(result.all_messages()) == [f"acting for {DANA}"]


def test_the_user_never_comes_from_the_model() -> None:
    ran: list[str] = []

    def delete_issue(key: str, user: str) -> str:
        """Delete an issue on behalf of ``user``."""
        ran.append(key)
        return f"deleted {key}"

    engine = allow(("admin@example.com", "issue:PAY-1"))
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1", "user": "admin@example.com"})]),
        deps_type=Deps,
        tools=[delete_issue],
        capabilities=[ToolpassAuthorization(engine, {"delete_issue": DELETE})],
    )
    result = run_sync(agent, "go", deps=Deps(ERIN))
    assert "not_authorized" in read_back(result.all_messages())[0]
    assert ran == []
    assert engine.asked == [(ERIN, "jira-main", "DELETE_ISSUES", "issue:PAY-1")]


def test_a_user_source_that_raises_refuses_and_the_run_goes_on(
    kit: Toolkit, events: list[AuditEvent]
) -> None:
    tools = Recorder()

    def broken(ctx: Any) -> str:
        raise LookupError("no such account")

    agent = Agent(
        scripted([("whoami", {}), ("whoami", {})]),
        deps_type=Deps,
        tools=[tools.whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), user=broken, toolkit=kit)],
    )
    result = run_sync(agent, "go", deps=Deps(DANA))
    out = read_back(result.all_messages())
    assert ["check_error" in o for o in out] == [True, True]
    assert "no such account" not in out[0]
    assert tools.ran == []
    assert result.output == "done"
    assert [(e.tool, e.user, e.code) for e in events] == [("whoami", None, "check_error")] * 2
    assert "no such account" in (events[0].detail or "")  # the detail is for the audit


def test_a_run_without_a_user_is_refused_and_audited(
    kit: Toolkit, events: list[AuditEvent]
) -> None:
    tools = Recorder()
    agent = Agent(
        scripted([("whoami", {})]),
        deps_type=Deps,
        tools=[tools.whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), toolkit=kit)],
    )
    out = read_back(run_sync(agent, "go", deps=Deps(None)).all_messages())
    assert "Refused by toolpass (no_session)" in out[0]
    assert [(e.tool, e.user, e.outcome, e.code) for e in events] == [
        ("whoami", None, "refused", "no_session")
    ]


def test_a_session_the_application_opened_for_another_user_refuses() -> None:
    tools = Recorder()
    agent = Agent(
        scripted([("whoami", {})]),
        deps_type=Deps,
        tools=[tools.whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine())],
    )
    with Session(ERIN).active():
        result = run_sync(agent, "go", deps=Deps(DANA))
    assert "check_error" in read_back(result.all_messages())[0]
    assert tools.ran == []
    with Session(DANA).active():  # the same user: the application's session is used
        result = run_sync(agent, "go", deps=Deps(DANA))
    assert read_back(result.all_messages()) == [f"acting for {DANA}"]


# Refusals raised inside a tool's body.


def _strict_scope_tool() -> Any:
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"contents of {path}"

    # on_refuse=None: the tool raises ToolRefused, as toolpass.tool() does by default.
    return Toolkit(on_refuse=None).secured_tool(
        read_file, effect="read", scope={"path": "docs/*"}, on_refuse=None
    )


def test_a_refusal_raised_inside_a_tool_body_reaches_the_model() -> None:
    script = [("read_file", {"path": "/etc/passwd"}), ("read_file", {"path": "docs/a.md"})]
    agent = Agent(
        scripted(script),
        deps_type=Deps,
        tools=[_strict_scope_tool()],
        capabilities=[ToolpassAuthorization(ScriptedEngine())],
    )
    result = run_sync(agent, "go", deps=Deps(DANA))
    out = read_back(result.all_messages())
    assert "Refused by toolpass (out_of_scope)" in out[0]
    assert out[1] == "contents of docs/a.md"
    assert result.output == "done"


def test_without_toolpass_the_same_refusal_crashes_the_run() -> None:
    """Pydantic AI's own behaviour, for the README's table: a tool's exception ends the run."""
    agent = Agent(
        scripted([("read_file", {"path": "/etc/passwd"})]),
        deps_type=Deps,
        tools=[_strict_scope_tool()],
    )
    with Session(DANA).active(), pytest.raises(ToolRefused):
        run_sync(agent, "go", deps=Deps(DANA))


def test_a_tool_exception_stays_the_frameworks_and_is_audited(
    kit: Toolkit, events: list[AuditEvent]
) -> None:
    def flaky(key: str) -> str:
        """Fails."""
        raise ValueError("internal detail")

    agent = Agent(
        scripted([("flaky", {"key": "PAY-1"})]),
        deps_type=Deps,
        tools=[flaky],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), toolkit=kit)],
    )
    with pytest.raises(ValueError, match="internal detail"):
        run_sync(agent, "go", deps=Deps(DANA))
    [event] = events
    assert (event.tool, event.user, event.outcome) == ("flaky", DANA, "error")


# secured_tool(..., as_tool=...) through the real loop.


def _secured_read(recorder: list[str], as_tool: Any, **options: Any) -> Any:
    def read_file(path: str) -> str:
        """Read a file of the project."""
        recorder.append(path)
        return f"contents of {path}"

    return Toolkit().secured_tool(
        read_file, effect="read", scope={"path": "docs/*"}, as_tool=as_tool, **options
    )


def test_as_tool_with_pydantic_ai_tool_inside_the_capability() -> None:
    ran: list[str] = []
    tool = _secured_read(ran, Tool)
    assert isinstance(tool, Tool)
    script = [("read_file", {"path": "docs/a.md"}), ("read_file", {"path": "../secrets"})]
    agent = Agent(
        scripted(script),
        deps_type=Deps,
        tools=[tool],
        capabilities=[ToolpassAuthorization(ScriptedEngine())],
    )
    result = run_sync(agent, "go", deps=Deps(DANA))
    out = read_back(result.all_messages())
    assert out[0] == "contents of docs/a.md"
    assert "outside what this tool may touch" in out[1]  # the refusal is the tool's result
    assert ran == ["docs/a.md"]
    assert result.output == "done"


def test_as_tool_with_tool_plain_and_the_applications_own_session() -> None:
    ran: list[str] = []
    agent = Agent(scripted([("read_file", {"path": "docs/a.md"}), ("read_file", {"path": "x"})]))
    _secured_read(ran, agent.tool_plain)
    with Session(DANA).active():
        result = run_sync(agent, "go")
    out = read_back(result.all_messages())
    assert out[0] == "contents of docs/a.md"
    assert "outside what this tool may touch" in out[1]
    assert ran == ["docs/a.md"]
    # No session at all: refused, and the model reads why.
    result = run_sync(agent, "go")
    assert all("No user session is active" in o for o in read_back(result.all_messages()))
    assert ran == ["docs/a.md"]


def test_as_tool_with_tool_failed_gives_a_failed_tool_result() -> None:
    ran: list[str] = []
    tool = _secured_read(ran, Tool, on_refuse=tool_failed)
    agent = Agent(
        scripted([("read_file", {"path": "x"})]),
        deps_type=Deps,
        tools=[tool],
        capabilities=[ToolpassAuthorization(ScriptedEngine())],
    )
    result = run_sync(agent, "go", deps=Deps(DANA))
    [part] = [
        p
        for m in result.all_messages()
        for p in getattr(m, "parts", [])
        if getattr(p, "part_kind", "") == "tool-return"
    ]
    assert part.outcome == "failed"
    assert "Refused by toolpass (out_of_scope)" in part.content
    assert ran == []


# Sessions per run.


def test_limits_last_the_run_and_each_run_starts_afresh(events: list[AuditEvent]) -> None:
    tools = Recorder()
    kit = Toolkit(tool_limits={"whoami": 1}, audit=[events.append])
    agent = Agent(
        scripted([("whoami", {}), ("whoami", {})]),
        deps_type=Deps,
        tools=[tools.whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), toolkit=kit)],
    )
    for _ in range(2):
        result = run_sync(agent, "go", deps=Deps(DANA))
        out = read_back(result.all_messages())
        assert out[0] == f"acting for {DANA}"
        assert "limit_exceeded" in out[1]
    first, second = {e.session_id for e in events[:2]}, {e.session_id for e in events[2:]}
    assert len(first) == len(second) == 1
    assert first != second


def test_the_toolset_keeps_one_session_for_the_run(events: list[AuditEvent]) -> None:
    tools = Recorder()
    kit = Toolkit(tool_limits={"whoami": 1}, audit=[events.append])
    toolset = ToolpassToolset(FunctionToolset([tools.whoami]), ScriptedEngine(), toolkit=kit)
    agent = Agent(scripted([("whoami", {}), ("whoami", {})]), deps_type=Deps, toolsets=[toolset])
    out = read_back(run_sync(agent, "go", deps=Deps(DANA)).all_messages())
    assert "limit_exceeded" in out[1]
    assert len({e.session_id for e in events}) == 1


# Every way a tool reaches the agent.


def test_tools_added_for_one_run_are_checked() -> None:
    tools = Recorder()
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1"})]),
        deps_type=Deps,
        capabilities=[ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE})],
    )
    result = run_sync(
        agent, "go", deps=Deps(ERIN), toolsets=[FunctionToolset([tools.delete_issue])]
    )
    assert "not_authorized" in read_back(result.all_messages())[0]
    assert tools.ran == []


def test_strict_covers_tools_of_every_toolset() -> None:
    tools = Recorder()
    agent = Agent(
        scripted([("whoami", {}), ("close_issue", {"key": "PAY-1"})]),
        deps_type=Deps,
        tools=[tools.whoami],
        toolsets=[FunctionToolset([tools.close_issue])],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), strict=True)],
    )
    out = read_back(run_sync(agent, "go", deps=Deps(DANA)).all_messages())
    assert ["not_configured" in o for o in out] == [True, True]
    assert tools.ran == []


def test_parallel_calls_in_one_response_are_each_checked() -> None:
    tools = Recorder()
    engine = allow((DANA, "issue:PAY-1"))

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("delete_issue", {"key": "PAY-1"}, tool_call_id="a"),
                    ToolCallPart("delete_issue", {"key": "PAY-2"}, tool_call_id="b"),
                    ToolCallPart("whoami", {}, tool_call_id="c"),
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(respond),
        deps_type=Deps,
        tools=[tools.delete_issue, tools.whoami],
        capabilities=[ToolpassAuthorization(engine, {"delete_issue": DELETE})],
    )
    out = read_back(run_sync(agent, "go", deps=Deps(DANA)).all_messages())
    assert out[0] == "deleted PAY-1"
    assert "not_authorized" in out[1]
    assert out[2] == f"acting for {DANA}"
    assert sorted(t for t, _ in tools.ran) == ["delete_issue", "whoami"]


def test_an_approved_call_is_still_authorized_when_it_runs() -> None:
    tools = Recorder()
    engine = allow((DANA, "issue:PAY-1"))
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1"})]),
        deps_type=Deps,
        output_type=[str, DeferredToolRequests],
        tools=[Tool(tools.delete_issue, requires_approval=True)],
        capabilities=[ToolpassAuthorization(engine, {"delete_issue": DELETE})],
    )
    first = run_sync(agent, "go", deps=Deps(DANA))
    assert isinstance(first.output, DeferredToolRequests)
    engine.answers.clear()  # the permission was revoked while the call waited for approval
    second = run_sync(
        agent,
        None,
        deps=Deps(DANA),
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"c0": True}),
    )
    assert "not_authorized" in read_back(second.all_messages())[0]
    assert tools.ran == []


def test_a_streamed_run_is_checked_too() -> None:
    tools = Recorder()
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1"}), ("whoami", {})]),
        deps_type=Deps,
        tools=[tools.delete_issue, tools.whoami],
        capabilities=[ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE})],
    )

    async def go() -> list[str]:
        async with agent.iter("go", deps=Deps(ERIN)) as run:
            async for _ in run:
                pass
        assert run.result is not None
        return read_back(run.result.all_messages())

    out = asyncio.run(go())
    assert "not_authorized" in out[0]
    assert out[1] == f"acting for {ERIN}"
    assert tools.ran == [("whoami", {})]


# MCP tools.


@pytest.fixture
def mcp_server(tmp_path: Path) -> tuple[Any, Path]:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    log = tmp_path / "mcp.log"
    log.touch()
    transport = StdioTransport(sys.executable, [str(HERE / "mcp_issues_server.py"), str(log)])
    return MCPToolset(transport), log


@pytest.mark.parametrize("how", ["capability", "toolset"])
def test_mcp_tools_are_checked_and_a_refused_call_never_reaches_the_server(
    mcp_server: tuple[Any, Path], how: str, kit: Toolkit, events: list[AuditEvent]
) -> None:
    toolset, log = mcp_server
    engine = allow((DANA, "issue:PAY-2"))
    rules = {"delete_issue": DELETE}
    script = [
        ("delete_issue", {"key": "PAY-1"}),
        ("list_issues", {"project": "PAY"}),
        ("delete_issue", {"key": "PAY-2"}),
    ]
    if how == "capability":
        agent = Agent(
            scripted(script),
            deps_type=Deps,
            toolsets=[toolset],
            capabilities=[ToolpassAuthorization(engine, rules, toolkit=kit)],
        )
    else:
        agent = Agent(
            scripted(script),
            deps_type=Deps,
            toolsets=[ToolpassToolset(toolset, engine, rules, toolkit=kit)],
        )
    out = read_back(run_sync(agent, "go", deps=Deps(DANA)).all_messages())
    assert "not_authorized" in out[0]
    assert out[1:] == ["PAY-1, PAY-2", "deleted PAY-2"]
    assert log.read_text().splitlines() == ["list_issues PAY", "delete_issue PAY-2"]
    assert [(e.tool, e.user, e.code) for e in events] == [
        ("delete_issue", DANA, "not_authorized"),
        ("list_issues", DANA, None),
        ("delete_issue", DANA, None),
    ]


# The audit trail.


def test_every_call_is_audited_once_with_the_user(kit: Toolkit, events: list[AuditEvent]) -> None:
    tools = Recorder()
    engine = allow((DANA, "issue:PAY-1"))
    agent = Agent(
        scripted([("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-9"})]),
        deps_type=Deps,
        tools=[tools.delete_issue],
        capabilities=[ToolpassAuthorization(engine, {"delete_issue": DELETE}, toolkit=kit)],
    )
    run_sync(agent, "go", deps=Deps(DANA))
    assert [(e.tool, e.user, e.outcome, e.code, e.arguments) for e in events] == [
        ("delete_issue", DANA, "ok", None, {"key": "PAY-1"}),
        ("delete_issue", DANA, "refused", "not_authorized", {"key": "PAY-9"}),
    ]
