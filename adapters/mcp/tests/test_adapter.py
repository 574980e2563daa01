"""toolpass.mcp's own behaviour, through real MCP client sessions: where the user comes from
(and never from), every way the guard itself can fail (each refuses, the tool never runs, the
server keeps serving), a tool's own errors as MCP makes them, one audit event per call,
approvals, sessions per connection, and the fastmcp middleware."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError as FastMCPToolError
from mcp import Client
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_client import call_all, token_for
from mcp_types import CallToolResult
from pytest_toolpass import ScriptedEngine
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit, current_session
from toolpass.mcp import FastMCPGuard, Rule, ToolpassMiddleware, guard, refusal_result

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")


class Tools:
    """An MCP server's tools, each recording its runs."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def server(self, factory: Callable[..., Any] = MCPServer) -> Any:
        server = factory("ops")
        ran = self.ran

        def delete_issue(key: str) -> str:
            """Delete an issue."""
            ran.append(f"delete_issue {key}")
            return f"deleted {key}"

        def whoami() -> str:
            """Who this call acts for."""
            ran.append("whoami")
            session = current_session()
            return f"{session.user} {session.id}" if session else "nobody"

        def boom() -> str:
            """Fails."""
            ran.append("boom")
            raise ValueError("internal detail")

        def told() -> str:
            """Fails with a message for the model."""
            ran.append("told")
            raise (ToolError if factory is MCPServer else FastMCPToolError)("try PAY-2")

        for fn in (delete_issue, whoami, boom, told):
            if factory is MCPServer:
                server.add_tool(fn)
            else:
                server.tool(fn)
        return server


def audited() -> tuple[Toolkit, list[AuditEvent]]:
    events: list[AuditEvent] = []
    return Toolkit(audit=[events.append]), events


async def raw(server: Any, name: str, arguments: Any, user: str | None = DANA) -> Any:
    """One call in a client session of its own, with ``user``'s access token: its result, or
    the ``MCPError`` it raised."""

    async def go() -> Any:
        auth_context_var.set(token_for(user))
        async with Client(server, mode="legacy") as client:
            try:
                return await client.call_tool(name, arguments)
            except MCPError as error:
                return error

    return await asyncio.create_task(go(), context=contextvars.copy_context())


# Where the user comes from.


@pytest.mark.asyncio
async def test_the_user_is_the_tokens_email_claim_never_the_arguments() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine())
    out = await call_all(server, [("whoami", {"user": ERIN, "email": ERIN})], DANA)
    assert out.outputs[0].startswith(DANA)


@pytest.mark.asyncio
async def test_another_claim() -> None:
    tools, kit_events = Tools(), audited()
    server = tools.server()
    guard(server, ScriptedEngine(), claim="sub", toolkit=kit_events[0])
    out = await call_all(server, [("whoami", {})], DANA)
    assert out.outputs[0].startswith(f"sub-{DANA} ")
    server = tools.server()
    guard(server, ScriptedEngine(), claim="upn")  # the token has no such claim
    out = await call_all(server, [("whoami", {})], DANA)
    assert out.outputs[0].startswith("[error] Refused by toolpass (no_session)")
    assert "'upn' claim" in out.outputs[0]


@pytest.mark.asyncio
async def test_user_for_a_stdio_server_and_the_token_wins_over_it() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine(), user=ERIN)
    without = await call_all(server, [("whoami", {})], None)
    assert without.outputs[0].startswith(ERIN)  # no token: the server's one user
    with_token = await call_all(server, [("whoami", {})], DANA)
    assert with_token.outputs[0].startswith(DANA)  # authenticated: the token's user only


@pytest.mark.asyncio
async def test_a_user_callable_gets_the_request_context() -> None:
    seen: list[Any] = []

    def user(ctx: Any) -> str:
        seen.append(ctx)
        return "ops@example.com"

    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine(), user=user)
    out = await call_all(server, [("whoami", {})], None)
    assert out.outputs[0].startswith("ops@example.com")
    [ctx] = seen
    assert ctx.method == "tools/call"
    assert ctx.params["name"] == "whoami"


@pytest.mark.parametrize(
    "user",
    [
        lambda ctx: 1 / 0,  # the application's source fails
        lambda ctx: 42,  # names something other than a user
    ],
)
@pytest.mark.asyncio
async def test_a_failing_user_source_refuses(user: Callable[[Any], Any]) -> None:
    tools, (kit, events) = Tools(), audited()
    server = tools.server()
    guard(server, ScriptedEngine(), user=user, toolkit=kit)
    out = await call_all(server, [("delete_issue", {"key": "PAY-1"}), ("whoami", {})], DANA)
    assert tools.ran == []
    assert all(o.startswith("[error] Refused by toolpass (check_error)") for o in out.outputs)
    assert [(e.tool, e.code) for e in events] == [
        ("delete_issue", "check_error"),
        ("whoami", "check_error"),
    ]


@pytest.mark.asyncio
async def test_a_claim_that_is_not_a_string_refuses() -> None:
    tools, (kit, events) = Tools(), audited()
    server = tools.server()
    guard(server, ScriptedEngine(), toolkit=kit)

    async def go() -> CallToolResult:
        auth_context_var.set(
            AuthenticatedUser(
                AccessToken(token="t", client_id="c", scopes=[], claims={"email": [DANA, ERIN]})
            )
        )
        async with Client(server) as client:
            return await client.call_tool("whoami", {})

    result = await _isolated(go())
    assert tools.ran == []
    assert result.is_error
    assert "Refused by toolpass (check_error)" in result.content[0].text
    assert events[0].detail is not None
    assert "not a string" in events[0].detail


# Every failure of the guard refuses; the server keeps serving.


@pytest.mark.asyncio
async def test_on_refuse_failing_or_giving_nothing_still_refuses_with_the_reason() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})

    def broken(refused: Any) -> str:
        raise RuntimeError("bug")

    for on_refuse in (broken, lambda refused: None):
        tools = Tools()
        server = tools.server()
        guard(server, engine, {"delete_issue": DELETE}, on_refuse=on_refuse)
        out = await call_all(server, [("delete_issue", {"key": "PAY-1"}), ("whoami", {})], DANA)
        assert tools.ran == ["whoami"]
        assert out.outputs[0].startswith("[error] Refused by toolpass (not_authorized)")


@pytest.mark.asyncio
async def test_on_refuse_may_give_the_result_itself_or_none_makes_it_an_error() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    tools = Tools()
    server = tools.server()
    guard(server, engine, {"delete_issue": DELETE}, on_refuse=lambda r: refusal_result("Nope."))
    result = await raw(server, "delete_issue", {"key": "PAY-1"})
    assert result.is_error
    assert result.content[0].text == "Nope."  # type: ignore[union-attr]
    server = tools.server()
    guard(server, engine, {"delete_issue": DELETE}, on_refuse=None)
    error = await raw(server, "delete_issue", {"key": "PAY-1"})
    assert isinstance(error, MCPError)
    assert error.message.startswith("Refused by toolpass (not_authorized)")
    assert error.data == {"code": "not_authorized"}
    assert tools.ran == []


@pytest.mark.asyncio
async def test_the_refusal_names_its_code_in_meta() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine(), {"delete_issue": DELETE})
    result = await raw(server, "delete_issue", {"key": "PAY-1"}, user=None)
    assert result.is_error
    assert result.meta is not None
    assert result.meta["toolpass"] == {"code": "no_session"}


@pytest.mark.parametrize(
    "params",
    [
        {"name": "delete_issue", "arguments": ["PAY-1"]},
        {"name": ["delete_issue"], "arguments": {"key": "PAY-1"}},
        None,
    ],
)
@pytest.mark.asyncio
async def test_params_the_guard_cannot_read_are_refused_before_validation(params: Any) -> None:
    """The middleware runs before MCP validates the params (a client sends what it likes)."""
    tools, (kit, events) = Tools(), audited()
    server = tools.server()
    middleware = guard(server, ScriptedEngine(), {"delete_issue": DELETE}, toolkit=kit)
    reached: list[Any] = []

    async def call_next(ctx: Any) -> Any:
        reached.append(ctx)
        return {"content": [], "isError": False}

    ctx = ServerRequestContext(
        session=None,  # type: ignore[arg-type]
        lifespan_context={},
        protocol_version="2025-11-25",
        method="tools/call",
        params=params,
        request_id=1,
    )
    auth_context_var.set(token_for(DANA))
    result = await middleware(ctx, call_next)
    assert reached == []
    result = CallToolResult.model_validate(result)  # on the wire, as the server's results
    assert result.is_error
    assert "check_error" in result.content[0].text  # type: ignore[union-attr]
    assert [e.code for e in events] == ["check_error"]


@pytest.mark.asyncio
async def test_a_toolkit_whose_hook_raises_refuses() -> None:
    class Broken:
        def check(self, *args: Any, **kwargs: Any) -> Decision:
            raise AssertionError("engine bug")

    tools = Tools()
    server = tools.server()
    guard(server, Broken(), {"delete_issue": DELETE})
    out = await call_all(server, [("delete_issue", {"key": "PAY-1"})], DANA)
    assert tools.ran == []
    assert out.outputs[0].startswith("[error] Refused by toolpass (check_error)")
    assert "engine bug" not in out.outputs[0]


# What the tool does, as without toolpass.


@pytest.mark.asyncio
async def test_a_tools_exceptions_are_as_mcp_makes_them_and_audited_once() -> None:
    tools, (kit, events) = Tools(), audited()
    bare = Tools().server()
    server = tools.server()
    guard(server, ScriptedEngine(), toolkit=kit)
    calls = [("boom", {}), ("told", {})]
    without = await call_all(bare, calls, DANA)
    out = await call_all(server, calls, DANA)
    assert out.outputs == without.outputs
    assert out.outputs == [
        "[error] Error executing tool boom",  # masked by MCP, with or without toolpass
        "[error] Error executing tool told: try PAY-2",
    ]
    # MCP made each failure an isError result: the call failed, audited as an error
    assert [(e.tool, e.outcome) for e in events] == [("boom", "error"), ("told", "error")]


@pytest.mark.asyncio
async def test_one_audit_event_per_call() -> None:
    engine = ScriptedEngine(
        {
            (DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow(),
            (DANA, "DELETE_ISSUES", "issue:PAY-2"): Decision.deny("no"),
        }
    )
    tools, (kit, events) = Tools(), audited()
    server = tools.server()
    guard(server, engine, {"delete_issue": DELETE}, toolkit=kit)
    calls = [("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"})]
    await call_all(server, calls, DANA)
    await call_all(server, [("whoami", {})], None)
    assert [(e.tool, e.user, e.outcome, e.code) for e in events] == [
        ("delete_issue", DANA, "ok", None),
        ("delete_issue", DANA, "refused", "not_authorized"),
        ("whoami", None, "refused", "no_session"),
    ]


@pytest.mark.asyncio
async def test_other_messages_pass_through() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine(), strict=True)
    auth_context_var.set(None)
    async with Client(server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == ["delete_issue", "whoami", "boom", "told"]


# Approvals: the call waits; the model reads the request's id; the same call runs once it is
# approved.


@pytest.mark.asyncio
async def test_a_call_waiting_for_approval() -> None:
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue)
    ran: list[int] = []

    @kit.secured_tool(approve=True, effect="write")
    def merge_pr(repo: str, number: int) -> str:
        """Merge a pull request."""
        ran.append(number)
        return f"merged #{number}"

    server: MCPServer = MCPServer("ops")
    server.add_tool(merge_pr)
    guard(server, None, toolkit=kit)
    auth_context_var.set(token_for(DANA))
    async with Client(server, mode="legacy") as client:  # one session: the call is retried
        waiting = await client.call_tool("merge_pr", {"repo": "acme/app", "number": 7})
        assert waiting.is_error
        assert ran == []
        assert "approval_pending" in waiting.content[0].text  # type: ignore[union-attr]
        assert waiting.meta is not None
        request_id = waiting.meta["toolpass"]["approval_id"]
        assert request_id in waiting.content[0].text  # type: ignore[union-attr]
        queue.approve(request_id, by="lead@example.com")
        merged = await client.call_tool("merge_pr", {"repo": "acme/app", "number": 7})
    assert not merged.is_error
    assert ran == [7]


# Sessions.


@pytest.mark.asyncio
async def test_a_session_lasts_for_the_connection() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine())
    legacy = await call_all(server, [("whoami", {}), ("whoami", {})], DANA, mode="legacy")
    first, second = (o.split()[1] for o in legacy.outputs)
    assert first == second  # one client session on a handshake-era connection
    again = await call_all(server, [("whoami", {})], DANA, mode="legacy")
    assert again.outputs[0].split()[1] != first  # a new client session, a new session
    # The 2026-07-28 protocol is stateless (each request is a connection of its own): the
    # requests of one client share its session.
    modern = await call_all(server, [("whoami", {}), ("whoami", {})], DANA)
    assert modern.outputs[0].split()[1] == modern.outputs[1].split()[1]


@pytest.mark.asyncio
async def test_many_users_at_once_each_see_their_own() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine())
    users = [f"user{i}@example.com" for i in range(12)]
    outs = await asyncio.gather(*(call_all(server, [("whoami", {})] * 3, u) for u in users))
    for user, out in zip(users, outs, strict=True):
        assert all(o.startswith(f"{user} ") for o in out.outputs)


def test_threads_each_with_their_own_loop_never_see_each_other() -> None:
    tools = Tools()
    server = tools.server()
    guard(server, ScriptedEngine())
    seen: dict[str, list[str]] = {}

    def go(user: str) -> None:
        seen[user] = asyncio.run(call_all(server, [("whoami", {})] * 3, user)).outputs

    threads = [threading.Thread(target=go, args=(f"t{i}@example.com",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(seen) == 6
    for user, outputs in seen.items():
        assert all(o.startswith(f"{user} ") for o in outputs)


# Built once, checked once.


def test_guard_checks_the_rules_against_the_tools_it_knows() -> None:
    server = Tools().server()
    with pytest.raises(ValueError, match="names id, which the tool does not take"):
        guard(server, ScriptedEngine(), {"delete_issue": Rule("jira", "DELETE_ISSUES", "i:{id}")})
    with pytest.raises(TypeError, match="user is the user's name"):
        guard(server, ScriptedEngine(), user=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="claim is the name"):
        guard(server, ScriptedEngine(), claim="")
    with pytest.raises(TypeError, match="MCPServer or Server"):
        guard(object(), ScriptedEngine())
    assert isinstance(guard(server, ScriptedEngine()), ToolpassMiddleware)
    assert server.middleware[-1].guard.explain().tools.keys() >= {"delete_issue", "whoami"}


@pytest.mark.asyncio
async def test_a_rule_for_a_tool_the_server_lacks_is_a_warning_when_tools_are_listed() -> None:
    server = Tools().server()
    guard(server, ScriptedEngine(), {"close_issue": DELETE})
    auth_context_var.set(None)
    with pytest.warns(UserWarning, match="rules for tools the agent does not have: close_issue"):
        async with Client(server) as client:
            await client.list_tools()


# fastmcp.


@pytest.mark.asyncio
async def test_fastmcp_refusals_errors_and_on_refuse_none() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    tools, (kit, events) = Tools(), audited()
    server = tools.server(FastMCP)
    added = guard(server, engine, {"delete_issue": DELETE}, toolkit=kit)
    assert isinstance(added, FastMCPGuard)

    async def calls(server: Any) -> list[tuple[bool, str]]:
        auth_context_var.set(token_for(DANA))
        async with FastMCPClient(server) as client:
            results = [
                await client.call_tool(name, args, raise_on_error=False)
                for name, args in [("delete_issue", {"key": "PAY-1"}), ("boom", {}), ("told", {})]
            ]
        return [(r.is_error, r.content[0].text) for r in results]  # type: ignore[union-attr]

    out = await _isolated(calls(server))
    assert out[0] == (True, "Refused by toolpass (not_authorized): " + out[0][1].split(": ", 1)[1])
    bare = await _isolated(calls(Tools().server(FastMCP)))
    assert out[1:] == bare[1:]  # the tool's own errors as FastMCP makes them
    assert tools.ran == ["boom", "told"]
    assert [(e.tool, e.code) for e in events] == [
        ("delete_issue", "not_authorized"),
        ("boom", None),
        ("told", None),
    ]
    strict = Tools().server(FastMCP)
    strict.add_middleware(FastMCPGuard(engine, {"delete_issue": DELETE}, on_refuse=None))
    auth_context_var.set(token_for(DANA))
    async with FastMCPClient(strict) as client:
        with pytest.raises(MCPError, match=r"Refused by toolpass \(not_authorized\)"):
            await client.call_tool("delete_issue", {"key": "PAY-1"})


async def _isolated(coro: Awaitable[Any]) -> Any:
    async def run() -> Any:
        return await coro

    return await asyncio.create_task(run(), context=contextvars.copy_context())
