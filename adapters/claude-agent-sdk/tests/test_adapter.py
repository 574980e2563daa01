"""toolpass-claude-agent-sdk through the SDK's real loop (the bundled Claude Code CLI and a
scripted model behind a fake Messages API): the two seams (in-process tools run the whole
pipeline; the PreToolUse hook decides for built-ins and servers toolpass cannot copy), every
failure of the guard refusing, one audit event per call, tools' exceptions, stopping the run,
sessions, approvals."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AgentDefinition,
    ClaudeSDKClient,
    McpSdkServerConfig,
    ResultMessage,
    UserMessage,
    tool,
)
from claude_agent_sdk.types import ToolResultBlock
from claude_harness import fake, options, run
from mcp import types
from mcp.server.lowlevel import Server
from pytest_toolpass import ScriptedEngine
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit
from toolpass.claude_agent_sdk import Rule, ToolpassHooks

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
READ = Rule("files", "READ", "file:{file_path}")
MAY_DELETE = {(DANA, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for n in range(5)}


class Tools:
    """In-process tools recording every run."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def served(self) -> list[Any]:
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.ran.append(("delete_issue", {"key": key}))
            return f"deleted {key}"

        def leak(key: str) -> str:
            """Fails, naming a secret."""
            self.ran.append(("leak", {"key": key}))
            raise RuntimeError("db at postgres://app:hunter2hunter2@db.internal/prod is down")

        return [delete_issue, leak]


def guarded(guard: ToolpassHooks, served: Tools, **more: Any) -> Any:
    return guard.apply(options("ops", served.served(), **more))


def go(opts: Any, calls: list[Any]) -> Any:
    return asyncio.run(run(opts, calls))


def tool_events(events: list[AuditEvent], name: str) -> list[AuditEvent]:
    return [e for e in events if e.tool == name]


# In-process tools: the whole pipeline inside the tool's handler.


def test_an_in_process_tool_is_checked_once_and_audited_once() -> None:
    events: list[AuditEvent] = []
    engine = ScriptedEngine(MAY_DELETE)
    tools = Tools()
    guard = ToolpassHooks(
        engine,
        {"mcp__ops__delete_issue": DELETE},
        user=DANA,
        toolkit=Toolkit(audit=[events.append]),
    )
    ran = go(
        guarded(guard, tools),
        [
            ("mcp__ops__delete_issue", {"key": "PAY-1"}),
            ("mcp__ops__delete_issue", {"key": "PAY-9"}),
        ],
    )
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]
    assert ran.outputs[0] == "deleted PAY-1"
    # The handler's refusal: the tool's error result, with toolpass's reason.
    assert ran.outputs[1].startswith("[error] Refused by toolpass (not_authorized)")
    assert "PreToolUse" not in ran.outputs[1]
    assert ran.final == "done"
    assert engine.asked == [
        (DANA, "jira", "DELETE_ISSUES", "issue:PAY-1"),
        (DANA, "jira", "DELETE_ISSUES", "issue:PAY-9"),
    ]
    events = tool_events(events, "mcp__ops__delete_issue")
    assert [(e.outcome, e.code, e.user) for e in events] == [
        ("ok", None, DANA),
        ("refused", "not_authorized", DANA),
    ]


def test_a_tools_exception_reaches_the_model_as_without_toolpass_and_is_audited() -> None:
    """The SDK makes a handler's exception an error result of ``str(exc)``; so it stays (the
    pipeline would take out the call's credential, which this tool has none of)."""
    tools, events = Tools(), []
    guard = ToolpassHooks(ScriptedEngine(), user=DANA, toolkit=Toolkit(audit=[events.append]))
    ran = go(guarded(guard, tools), [("mcp__ops__leak", {"key": "PAY-1"})])
    assert tools.ran == [("leak", {"key": "PAY-1"})]
    assert ran.outputs[0] == "[error] db at postgres://app:hunter2hunter2@db.internal/prod is down"
    assert ran.final == "done"
    [event] = tool_events(events, "mcp__ops__leak")
    assert event.outcome == "error"
    assert "RuntimeError" in (event.detail or "")


def test_a_call_the_hook_did_not_see_is_refused() -> None:
    """The copied server without toolpass's hook (removed from the options): its handler
    cannot tell for whom it runs, so it runs nothing."""
    tools = Tools()
    events: list[AuditEvent] = []
    guard = ToolpassHooks(
        ScriptedEngine(MAY_DELETE), user=DANA, toolkit=Toolkit(audit=[events.append])
    )
    opts = dataclasses.replace(guarded(guard, tools), hooks={})
    ran = go(opts, [("mcp__ops__delete_issue", {"key": "PAY-1"})])
    assert tools.ran == []
    assert "check_error" in ran.outputs[0]
    [event] = tool_events(events, "mcp__ops__delete_issue")
    assert event.code == "check_error"
    assert "did not see this call" in (event.detail or "")


def test_apply_leaves_the_options_as_they_were_and_keeps_their_hooks() -> None:
    async def mine(input: Any, tool_use_id: Any, context: Any) -> Any:
        return {}

    from claude_agent_sdk import HookMatcher

    own = HookMatcher(matcher="Bash", hooks=[mine])
    before = options("ops", Tools().served(), hooks={"PreToolUse": [own], "Stop": [own]})
    servers = dict(before.mcp_servers)  # type: ignore[arg-type]
    after = ToolpassHooks(ScriptedEngine(), user=DANA).apply(before)
    assert before.mcp_servers == servers
    assert before.hooks == {"PreToolUse": [own], "Stop": [own]}
    assert after.hooks is not None
    first, second = after.hooks["PreToolUse"]
    assert second is own
    assert after.hooks["Stop"] == [own]
    assert first.matcher is None  # every tool
    assert first.on_failure == "block"  # a hook that fails blocks the call
    assert first.timeout == 30.0
    assert after.mcp_servers["ops"] is not before.mcp_servers["ops"]  # type: ignore[index]


def test_a_subagents_calls_are_checked_as_the_sessions_user() -> None:
    """A subagent (``agents=``, started by the model with Claude Code's ``Task`` tool, which
    the hook names ``Agent``) calls the in-process tool: checked and audited once each, for
    the user of the options."""
    events: list[AuditEvent] = []
    engine = ScriptedEngine(MAY_DELETE)
    tools = Tools()
    guard = ToolpassHooks(
        engine,
        {"mcp__ops__delete_issue": DELETE},
        user=DANA,
        toolkit=Toolkit(audit=[events.append]),
    )
    helper = AgentDefinition(
        description="Helps", prompt="You help.", tools=["mcp__ops__delete_issue"]
    )
    opts = guarded(guard, tools, tools=["Task"], allowed_tools=["Task"], agents={"helper": helper})
    task = fake().script(
        [
            ("mcp__ops__delete_issue", {"key": "PAY-1"}),
            ("mcp__ops__delete_issue", {"key": "PAY-9"}),
        ]
    )
    go(opts, [("Task", {"subagent_type": "helper", "description": "help", "prompt": task})])
    assert fake().outputs(task)[0] == "deleted PAY-1"
    assert "not_authorized" in fake().outputs(task)[1]
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]
    assert [(e.tool, e.user, e.code) for e in events] == [
        ("Agent", DANA, None),
        ("mcp__ops__delete_issue", DANA, None),
        ("mcp__ops__delete_issue", DANA, "not_authorized"),
    ]


# The hook decides: built-in tools and servers toolpass cannot copy.


@pytest.fixture
def files() -> dict[str, str]:
    home = Path(fake().home.name)
    made = {}
    for name, text in (("notes.txt", "meeting at noon"), ("salaries.txt", "SALARY-TABLE")):
        (home / name).write_text(text)
        made[name] = str(home / name)
    return made


def test_the_hook_decides_for_a_built_in_tool(files: dict[str, str]) -> None:
    events: list[AuditEvent] = []
    notes, salaries = files["notes.txt"], files["salaries.txt"]
    engine = ScriptedEngine({(DANA, "READ", f"file:{notes}"): Decision.allow()})
    guard = ToolpassHooks(engine, {"Read": READ}, user=DANA, toolkit=Toolkit(audit=[events.append]))
    opts = guard.apply(options(tools=["Read"], allowed_tools=["Read"]))
    ran = go(opts, [("Read", {"file_path": notes}), ("Read", {"file_path": salaries})])
    assert "meeting at noon" in ran.outputs[0]
    assert "SALARY-TABLE" not in ran.outputs[1]
    assert ran.outputs[1].startswith("[error] PreToolUse:Read hook error: Refused by toolpass")
    assert "not_authorized" in ran.outputs[1]
    assert ran.final == "done"
    assert [(e.outcome, e.code) for e in tool_events(events, "Read")] == [
        ("ok", None),
        ("refused", "not_authorized"),
    ]


def test_an_application_hook_that_allows_does_not_override_a_deny(files: dict[str, str]) -> None:
    """Claude Code runs the matchers of one event concurrently; a deny wins over an allow."""
    from claude_agent_sdk import HookMatcher

    async def allow_everything(input: Any, tool_use_id: Any, context: Any) -> Any:
        return {
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
        }

    mine = HookMatcher(hooks=[allow_everything])
    guard = ToolpassHooks(ScriptedEngine(), {"Read": READ}, user=ERIN)
    opts = guard.apply(
        options(tools=["Read"], allowed_tools=["Read"], hooks={"PreToolUse": [mine]})
    )
    ran = go(opts, [("Read", {"file_path": files["salaries.txt"]})])
    assert "SALARY-TABLE" not in ran.outputs[0]
    assert "not_authorized" in ran.outputs[0]


def hand_made_server(ran: list[str]) -> McpSdkServerConfig:
    """An SDK server built with mcp's own ``Server`` (its tools cannot be copied)."""

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"key": {"type": "string"}}}
        return types.ListToolsResult(
            tools=[types.Tool(name="close_issue", description="Close", inputSchema=schema)]
        )

    async def on_call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        ran.append(params.arguments["key"])
        text = types.TextContent(type="text", text=f"closed {params.arguments['key']}")
        return types.CallToolResult(content=[text])

    server = Server("mine", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return McpSdkServerConfig(type="sdk", name="mine", instance=server)


def test_the_hook_decides_for_a_server_it_cannot_copy() -> None:
    ran: list[str] = []
    close = Rule("jira", "CLOSE_ISSUES", "issue:{key}")
    engine = ScriptedEngine({(DANA, "CLOSE_ISSUES", "issue:PAY-1"): Decision.allow()})
    guard = ToolpassHooks(engine, {"mcp__mine__close_issue": close}, user=DANA)
    with pytest.warns(UserWarning, match="request hook does not watch their bodies"):
        opts = guard.apply(
            options(
                mcp_servers={"mine": hand_made_server(ran)},
                allowed_tools=["mcp__mine__close_issue"],
            )
        )
    assert opts.mcp_servers["mine"]["instance"] is not None  # type: ignore[index]
    out = go(
        opts,
        [
            ("mcp__mine__close_issue", {"key": "PAY-1"}),
            ("mcp__mine__close_issue", {"key": "PAY-2"}),
        ],
    )
    assert ran == ["PAY-1"]
    assert out.outputs[0] == "closed PAY-1"
    assert "PreToolUse:mcp__mine__close_issue hook error" in out.outputs[1]
    assert "not_authorized" in out.outputs[1]


# Every failure of the guard refuses.


def failing_user(input: Any) -> str:
    raise LookupError("no such session")


@pytest.mark.parametrize(
    "option",
    [
        {"user": failing_user},
        {"user": lambda input: 42},
        {"user": DANA, "session": lambda input: ["not", "an", "id"]},
    ],
    ids=["user raises", "user not a string", "session not an id"],
)
def test_a_failing_user_or_session_source_refuses(option: dict[str, Any]) -> None:
    tools, events = Tools(), []
    engine = ScriptedEngine(MAY_DELETE)
    guard = ToolpassHooks(engine, toolkit=Toolkit(audit=[events.append]), **option)
    ran = go(guarded(guard, tools), [("mcp__ops__delete_issue", {"key": "PAY-1"})])
    assert tools.ran == []
    assert "check_error" in ran.outputs[0]
    assert "no such session" not in ran.outputs[0]
    assert engine.asked == []
    [event] = tool_events(events, "mcp__ops__delete_issue")
    assert event.code == "check_error"


class SlowEngine(ScriptedEngine):
    """An engine that answers only once the test lets it (``release``): a check that would
    be allowed, if the hook waited for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = threading.Event()

    def check(self, *args: Any, **kwargs: Any) -> Decision:
        self.release.wait(60)
        return super().check(*args, **kwargs)

    async def acheck(self, *args: Any, **kwargs: Any) -> Decision:
        await asyncio.to_thread(self.release.wait, 60)
        return super().check(*args, **kwargs)


def test_a_check_slower_than_the_hooks_timeout_refuses(files: dict[str, str]) -> None:
    notes = files["notes.txt"]
    engine = SlowEngine({(DANA, "READ", f"file:{notes}"): Decision.allow()})
    events: list[AuditEvent] = []

    def stopped(event: AuditEvent) -> None:  # the hook gave up: the engine may answer now
        if event.outcome == "cancelled":
            engine.release.set()

    kit = Toolkit(audit=[events.append, stopped])
    guard = ToolpassHooks(engine, {"Read": READ}, user=DANA, timeout=2, toolkit=kit)
    opts = guard.apply(options(tools=["Read"], allowed_tools=["Read"]))
    try:  # the engine answers no sooner than the hook gives up: only its timeout ends it
        ran = go(opts, [("Read", {"file_path": notes})])
    finally:
        engine.release.set()
    assert "meeting at noon" not in ran.outputs[0]
    assert "authorization_error" in ran.outputs[0]
    assert "did not answer in time" in ran.outputs[0]
    [event] = tool_events(events, "Read")  # the check was stopped: one event says so
    assert event.outcome == "cancelled"


@pytest.mark.parametrize(
    "input",
    [None, "Bash", {}, {"tool_name": ""}, {"tool_name": "Bash", "tool_input": "rm -rf /"}],
)
def test_the_hook_denies_what_it_cannot_read(input: Any) -> None:
    """Every path of the hook returns a decision; one it cannot make is a deny."""
    opts = ToolpassHooks(ScriptedEngine(), user=DANA).apply(options())
    assert opts.hooks is not None
    [hook] = opts.hooks["PreToolUse"][0].hooks
    out: Any = asyncio.run(hook(input, "toolu_1", {"signal": None}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "check_error" in out["hookSpecificOutput"]["permissionDecisionReason"]


def test_an_on_refuse_that_fails_still_refuses() -> None:
    def broken(refused: Any) -> str:
        raise ValueError("oops")

    tools = Tools()
    guard = ToolpassHooks(
        ScriptedEngine(), {"mcp__ops__delete_issue": DELETE}, user=ERIN, on_refuse=broken
    )
    ran = go(guarded(guard, tools), [("mcp__ops__delete_issue", {"key": "PAY-1"})])
    assert tools.ran == []
    assert "Refused by toolpass (not_authorized)" in ran.outputs[0]


def test_on_refuse_none_stops_the_run(files: dict[str, str]) -> None:
    notes, salaries = files["notes.txt"], files["salaries.txt"]
    engine = ScriptedEngine({(DANA, "READ", f"file:{notes}"): Decision.allow()})
    guard = ToolpassHooks(engine, {"Read": READ}, user=DANA, on_refuse=None)
    opts = guard.apply(options(tools=["Read"], allowed_tools=["Read"]))
    ran = go(opts, [("Read", {"file_path": salaries}), ("Read", {"file_path": notes})])
    assert engine.asked == [(DANA, "files", "READ", f"file:{salaries}")]  # no second call
    [result] = [m for m in ran.messages if isinstance(m, ResultMessage)]
    assert ran.final != "done"
    results = [
        b
        for m in ran.messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert len(results) == 1
    assert results[0].is_error
    assert result.subtype == "success"


# Sessions: Claude Code's session id is the conversation.


def test_a_resumed_session_keeps_its_toolpass_session_and_a_new_one_does_not() -> None:
    kit = Toolkit(limits={"tool:mcp__ops__delete_issue": 1}, audit=[])
    tools = Tools()
    guard = ToolpassHooks(
        ScriptedEngine(MAY_DELETE), {"mcp__ops__delete_issue": DELETE}, user=DANA, toolkit=kit
    )
    opts = guarded(guard, tools)
    first = go(opts, [("mcp__ops__delete_issue", {"key": "PAY-1"})])
    assert first.outputs == ["deleted PAY-1"]
    resumed = go(
        dataclasses.replace(opts, resume=first.session_id),
        [("mcp__ops__delete_issue", {"key": "PAY-2"})],
    )
    assert resumed.session_id == first.session_id
    assert "limit_exceeded" in resumed.outputs[0]
    fresh = go(opts, [("mcp__ops__delete_issue", {"key": "PAY-3"})])
    assert fresh.session_id != first.session_id
    assert fresh.outputs == ["deleted PAY-3"]
    assert [k for _, a in tools.ran for k in a.values()] == ["PAY-1", "PAY-3"]


def test_session_run_is_one_prompt_of_a_client() -> None:
    def whoami() -> str:
        """Who this call acts for."""
        from toolpass import current_session

        session = current_session()
        return f"session {session.id if session else None}"

    async def chat(session: Any) -> list[str]:
        opts = ToolpassHooks(ScriptedEngine(), user=DANA, session=session).apply(
            options("ops", [whoami])
        )
        said = []
        async with ClaudeSDKClient(options=opts) as client:
            for _ in range(2):
                prompt = fake().script([("mcp__ops__whoami", {})])
                await client.query(prompt)
                async for _m in client.receive_response():
                    pass
                said += fake().outputs(prompt)
        return said

    first, second = asyncio.run(chat("run"))
    assert first != second
    first, second = asyncio.run(chat("conversation"))
    assert first == second


# Approvals: an in-process tool that needs a person's approval.


def test_a_call_waiting_for_approval_tells_the_model_and_runs_once_approved() -> None:
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[])
    wired: list[int] = []

    @kit.secured_tool(approve=True)
    def wire(amount: int) -> str:
        """Wire money."""
        wired.append(amount)
        return f"wired {amount}"

    @tool("wire", "Wire money", {"amount": int})
    async def wire_tool(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": wire(amount=args["amount"])}]}

    opts = ToolpassHooks(ScriptedEngine(), user=DANA, toolkit=kit).apply(
        options("pay", [wire_tool])
    )
    ran = go(opts, [("mcp__pay__wire", {"amount": 500})])
    assert wired == []
    assert "approval_pending" in ran.outputs[0]
    [request] = queue.pending()
    queue.approve(request.id, by="lee")
    again = go(
        dataclasses.replace(opts, resume=ran.session_id), [("mcp__pay__wire", {"amount": 500})]
    )
    assert wired == [500]
    assert again.outputs == ["wired 500"]
