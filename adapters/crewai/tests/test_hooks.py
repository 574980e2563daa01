"""ToolpassHooks through CrewAI's real crew loop: what CrewAI does with hooks on its own (the
facts the adapter is built on), every path that must block, the tool's own exceptions, one
audit event per call, scoping (``with``, decorators, ``install``), nested and concurrent crews,
and approvals."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import (
    HookAborted,
    InterceptionPoint,
    clear_before_tool_call_hooks,
    get_hooks,
    register_before_tool_call_hook,
    unregister_before_tool_call_hook,
)
from crewai.hooks.dispatch import scoped_hooks
from crewai.hooks.tool_hooks import ToolCallHookContext
from crewai.tools import BaseTool, tool
from crewai_script import ScriptedLLM, crew
from pytest_toolpass import ScriptedEngine
from toolpass import (
    ApprovalQueue,
    AuditEvent,
    Decision,
    Session,
    Toolkit,
    ToolRefused,
    current_session,
)
from toolpass.crewai import Rule, RunRefused, ToolpassHooks, ask_human, current_inputs

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {(u, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow() for u in (DANA, ERIN)}


class Recorder:
    """CrewAI tools that record their runs."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def note(self, name: str, value: Any = None) -> None:
        with self.lock:
            self.ran.append((name, value))

    def tools(self) -> list[BaseTool]:
        note = self.note

        @tool
        def delete_issue(key: str) -> str:
            """Delete an issue."""
            note("delete_issue", key)
            return f"deleted {key}"

        @tool
        def whoami() -> str:
            """Who this call acts for."""
            session = current_session()
            note("whoami", session.user if session else None)
            return f"acting for {session.user if session else 'nobody'}"

        @tool
        def explode(why: str) -> str:
            """Fails."""
            note("explode", why)
            raise ValueError(why)

        return [delete_issue, whoami, explode]


def kickoff(
    script: list[tuple[str, dict[str, Any]]],
    user: str | None = DANA,
    *,
    tools: list[BaseTool] | None = None,
    recorder: Recorder | None = None,
    **inputs: Any,
) -> tuple[list[str], str]:
    """One crew run (native tool calling) for ``user``; what the model read, its answer."""
    recorder = recorder or Recorder()
    built, llm = crew(script, tools if tools is not None else recorder.tools())
    if user is not None:
        inputs["user_id"] = user
    result = built.kickoff(inputs=inputs)
    return llm.outputs, str(result.raw)


# What CrewAI does on its own: why the adapter is built as it is.


def test_crewai_runs_the_tool_when_a_hook_raises_and_hides_an_abort_s_reason() -> None:
    def raising(ctx: ToolCallHookContext) -> None:
        raise RuntimeError("a bug in a hook")

    def aborting(ctx: ToolCallHookContext) -> None:
        if ctx.tool_input.get("key") == "PAY-2":
            raise HookAborted("the reason")

    recorder = Recorder()
    register_before_tool_call_hook(raising)
    register_before_tool_call_hook(aborting)
    try:
        out, _ = kickoff(
            [("delete_issue", {"key": "PAY-1"}), ("delete_issue", {"key": "PAY-2"})],
            recorder=recorder,
        )
    finally:
        unregister_before_tool_call_hook(raising)
        unregister_before_tool_call_hook(aborting)
    assert recorder.ran == [("delete_issue", "PAY-1")]  # fail-open: the raising hook let it run
    assert out == ["deleted PAY-1", "Tool execution blocked by hook. Tool: delete_issue"]


# Every path that must block.


def test_a_user_source_that_fails_refuses() -> None:
    events: list[AuditEvent] = []

    def broken(ctx: ToolCallHookContext) -> str:
        raise KeyError("user")

    recorder = Recorder()
    hooks = ToolpassHooks(
        ScriptedEngine(MAY_DELETE),
        {"delete_issue": DELETE},
        user=broken,
        toolkit=Toolkit(audit=[events.append]),
    )
    with hooks:
        out, final = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)
    assert recorder.ran == []
    assert out[0].startswith("Refused by toolpass (check_error)")
    assert "KeyError" not in out[0]  # the detail is for the audit
    assert final == "done"
    [event] = events
    assert (event.tool, event.code) == ("delete_issue", "check_error")
    assert "KeyError" in (event.detail or "")


def test_a_user_that_is_not_a_string_refuses() -> None:
    recorder = Recorder()
    with ToolpassHooks(ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}):
        out, _ = kickoff(
            [("delete_issue", {"key": "PAY-1"})], user=None, recorder=recorder, user_id=42
        )
    assert recorder.ran == []
    assert "check_error" in out[0]


def test_an_on_refuse_that_raises_still_blocks() -> None:
    def broken(refused: ToolRefused) -> str:
        raise RuntimeError("on_refuse bug")

    recorder = Recorder()
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    with ToolpassHooks(engine, {"delete_issue": DELETE}, on_refuse=broken):
        out, final = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)
    assert recorder.ran == []
    assert out[0].startswith("Refused by toolpass (check_error)")
    assert "on_refuse bug" not in out[0]
    assert final == "done"


def test_clearing_crewai_s_global_hooks_inside_the_block_leaves_the_crew_checked() -> None:
    recorder = Recorder()
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    with ToolpassHooks(engine, {"delete_issue": DELETE}):
        clear_before_tool_call_hooks()  # other code resetting CrewAI's hooks
        out, _ = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)
    assert recorder.ran == []
    assert "not_authorized" in out[0]


def test_a_nested_empty_scope_inside_the_block_leaves_the_crew_checked() -> None:
    recorder = Recorder()
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    with ToolpassHooks(engine, {"delete_issue": DELETE}), scoped_hooks():
        out, _ = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)
    assert recorder.ran == []
    assert "not_authorized" in out[0]


def test_on_refuse_none_ends_the_run_with_the_refusal() -> None:
    recorder = Recorder()
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    with (
        ToolpassHooks(engine, {"delete_issue": DELETE}, on_refuse=None),
        pytest.raises(RunRefused) as raised,
    ):
        kickoff([("delete_issue", {"key": "PAY-1"}), ("whoami", {})], recorder=recorder)
    assert recorder.ran == []
    assert isinstance(raised.value, ToolRefused)
    assert isinstance(raised.value, HookAborted)
    assert raised.value.code == "not_authorized"


# The tool's own outcome, and the audit.


def test_a_tool_s_exception_reaches_the_model_as_crewai_shows_it_and_is_audited() -> None:
    events: list[AuditEvent] = []
    recorder = Recorder()
    with ToolpassHooks(ScriptedEngine(), toolkit=Toolkit(audit=[events.append])):
        out, final = kickoff([("explode", {"why": "disk full"}), ("whoami", {})], recorder=recorder)
    assert out == ["Error executing tool: disk full", f"acting for {DANA}"]
    assert final == "done"
    assert [(e.tool, e.outcome) for e in events] == [("explode", "error"), ("whoami", "ok")]


def test_exactly_one_audit_event_per_call() -> None:
    events: list[AuditEvent] = []
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    script = [
        ("delete_issue", {"key": "PAY-1"}),
        ("delete_issue", {"key": "PAY-2"}),
        ("whoami", {}),
    ]
    with ToolpassHooks(engine, {"delete_issue": DELETE}, toolkit=Toolkit(audit=[events.append])):
        kickoff(script)
    assert [(e.tool, e.code, e.user) for e in events] == [
        ("delete_issue", None, DANA),
        ("delete_issue", "not_authorized", DANA),  # the scripted engine denies the rest
        ("whoami", None, DANA),
    ]


def test_an_async_tool_runs_in_the_pipeline() -> None:
    seen: list[str | None] = []

    @tool
    async def look(path: str) -> str:
        """Look at a file, asynchronously."""
        session = current_session()
        seen.append(session.user if session else None)
        await asyncio.sleep(0)
        return f"looked at {path}"

    with ToolpassHooks(ScriptedEngine()):
        out, _ = kickoff([("look", {"path": "a.md"})], tools=[look])
        built, llm = crew([("look", {"path": "b.md"})], [look])
        asyncio.run(built.akickoff(inputs={"user_id": ERIN}))
    assert out == ["looked at a.md"]
    assert llm.outputs == ["looked at b.md"]
    assert seen == [DANA, ERIN]


# Scope: what is checked, and what is not.


def _toolpass_hooks() -> list[Callable[[Any], Any]]:
    return [h for h in get_hooks(InterceptionPoint.PRE_TOOL_CALL) if "toolpass" in h.__module__]


def test_only_crews_inside_the_block_are_checked() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    hooks = ToolpassHooks(engine, {"delete_issue": DELETE})
    inside, outside = Recorder(), Recorder()
    started, done = threading.Event(), threading.Event()
    outputs: dict[str, list[str]] = {}

    def elsewhere() -> None:  # another thread, not in the block, while it is open
        started.wait(30)
        outputs["outside"], _ = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=outside)
        done.set()

    thread = threading.Thread(target=elsewhere)
    thread.start()
    with hooks:
        started.set()
        done.wait(60)
        outputs["inside"], _ = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=inside)
    thread.join(60)
    assert inside.ran == []
    assert "not_authorized" in outputs["inside"][0]
    assert outside.ran == [("delete_issue", "PAY-1")]
    assert _toolpass_hooks() == []  # nothing of toolpass is left registered
    after = Recorder()
    kickoff([("delete_issue", {"key": "PAY-1"})], recorder=after)
    assert after.ran == [("delete_issue", "PAY-1")]


def test_install_checks_every_crew_of_the_process_until_uninstalled() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    hooks = ToolpassHooks(engine, {"delete_issue": DELETE})
    hooks.install()
    hooks.install()  # once is enough
    try:
        recorder = Recorder()
        outputs: list[str] = []
        thread = threading.Thread(
            target=lambda: outputs.extend(
                kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)[0]
            )
        )
        thread.start()
        thread.join(60)
        assert recorder.ran == []
        assert "not_authorized" in outputs[0]
    finally:
        hooks.uninstall()
    assert _toolpass_hooks() == []
    recorder = Recorder()
    kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)
    assert recorder.ran == [("delete_issue", "PAY-1")]


def test_as_a_decorator_of_a_function_and_of_a_coroutine_function() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("no")})
    hooks = ToolpassHooks(engine, {"delete_issue": DELETE})
    recorder = Recorder()

    @hooks
    def run(user: str) -> list[str]:
        return kickoff([("delete_issue", {"key": "PAY-1"})], user, recorder=recorder)[0]

    @hooks
    async def arun(user: str) -> list[str]:
        built, llm = crew([("delete_issue", {"key": "PAY-1"})], recorder.tools())
        await built.akickoff(inputs={"user_id": user})
        return llm.outputs

    assert run.__name__ == "run"
    assert "not_authorized" in run(DANA)[0]
    assert "not_authorized" in asyncio.run(arun(DANA))[0]
    assert recorder.ran == []
    with pytest.raises(TypeError, match="decorates a function"):
        hooks(type("MyCrew", (), {}))


def test_exit_without_enter_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        ToolpassHooks(ScriptedEngine()).__exit__(None, None, None)


def test_nested_hooks_both_apply() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    recorder = Recorder()
    with ToolpassHooks(engine, {"delete_issue": DELETE}), ToolpassHooks(None, strict=True):
        out, _ = kickoff([("delete_issue", {"key": "PAY-1"})], recorder=recorder)
    assert recorder.ran == []
    assert "not_configured" in out[0]  # the inner one has no rule for it, and is strict
    assert engine.asked == [(DANA, "jira", "DELETE_ISSUES", "issue:PAY-1")]


# Users: from the kickoff, per execution.


def test_concurrent_kickoffs_in_one_block_keep_their_own_users() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    script = [("whoami", {}), ("delete_issue", {"key": "PAY-1"}), ("whoami", {})]

    async def both(method: str) -> dict[str, list[str]]:
        runs = {u: crew(script, Recorder().tools()) for u in (DANA, ERIN)}
        await asyncio.gather(
            *(getattr(c, method)(inputs={"user_id": u}) for u, (c, _) in runs.items())
        )
        return {u: llm.outputs for u, (_, llm) in runs.items()}

    with ToolpassHooks(engine, {"delete_issue": DELETE}):
        for method in ("kickoff_async", "akickoff"):
            outputs = asyncio.run(both(method))
            assert outputs[DANA][0] == outputs[DANA][2] == f"acting for {DANA}"
            assert outputs[ERIN][0] == outputs[ERIN][2] == f"acting for {ERIN}"
            assert outputs[DANA][1] == "deleted PAY-1"
            assert "not_authorized" in outputs[ERIN][1]


def test_a_crew_kicked_off_inside_a_tool_keeps_its_own_inputs_and_gives_them_back() -> None:
    inner = Recorder()
    seen: list[str] = []

    @tool
    def ask_team(question: str) -> str:
        """Ask another crew."""
        seen.append(current_inputs()["topic"])
        nested, llm = crew([("whoami", {})], inner.tools())
        nested.kickoff(inputs={"topic": "inner"})  # names no user: the enclosing one's
        seen.append(current_inputs()["topic"])
        return llm.outputs[0]

    recorder = Recorder()
    with ToolpassHooks(ScriptedEngine()):
        out, _ = kickoff(
            [("ask_team", {"question": "?"}), ("whoami", {})],
            tools=[ask_team, *recorder.tools()],
            topic="outer",
        )
    assert out == [f"acting for {DANA}", f"acting for {DANA}"]
    assert inner.ran == [("whoami", DANA)]
    assert seen == ["outer", "outer"]


def test_a_crew_for_another_user_inside_a_tool_is_refused() -> None:
    inner = Recorder()

    @tool
    def ask_team(question: str) -> str:
        """Ask another crew, for someone else."""
        nested, llm = crew([("whoami", {})], inner.tools())
        nested.kickoff(inputs={"user_id": ERIN})
        return llm.outputs[0]

    with ToolpassHooks(ScriptedEngine()):
        out, _ = kickoff([("ask_team", {"question": "?"})], tools=[ask_team])
    assert inner.ran == []  # erin's call inside dana's session does not run
    assert "check_error" in out[0]


def test_a_user_callable_is_given_the_hook_context() -> None:
    contexts: list[ToolCallHookContext] = []

    def user(ctx: ToolCallHookContext) -> str:
        contexts.append(ctx)
        return str(current_inputs()["email"])

    with ToolpassHooks(ScriptedEngine(), user=user):
        out, _ = kickoff([("whoami", {})], user=None, email=ERIN)
    assert out == [f"acting for {ERIN}"]
    assert [c.tool_name for c in contexts] == ["whoami"]


def test_a_session_named_by_the_application_outlives_one_kickoff() -> None:
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    engine = ScriptedEngine(MAY_DELETE)

    def chat(ctx: ToolCallHookContext) -> str:
        return str(current_inputs()["chat"])

    with ToolpassHooks(engine, {"delete_issue": DELETE}, toolkit=kit, session=chat):
        first, _ = kickoff([("delete_issue", {"key": "PAY-1"})], chat="c1")
        second, _ = kickoff([("delete_issue", {"key": "PAY-1"})], chat="c1")
        other, _ = kickoff([("delete_issue", {"key": "PAY-1"})], chat="c2")
    assert first == ["deleted PAY-1"]
    assert "limit_exceeded" in second[0]
    assert other == ["deleted PAY-1"]
    with ToolpassHooks(engine, {"delete_issue": DELETE}, toolkit=kit, session="run"):
        assert kickoff([("delete_issue", {"key": "PAY-1"})])[0] == ["deleted PAY-1"]
        assert kickoff([("delete_issue", {"key": "PAY-1"})])[0] == ["deleted PAY-1"]


# Approvals.


def _approval_tool(kit: Toolkit, ran: list[str]) -> BaseTool:
    @kit.secured_tool(approve=True)
    def close_sprint(sprint: str) -> str:
        """Close a sprint."""
        ran.append(sprint)
        return f"closed {sprint}"

    return tool(close_sprint)


def test_an_approval_waits_and_the_model_reads_so_until_a_person_approves() -> None:
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[])
    ran: list[str] = []
    close = _approval_tool(kit, ran)
    with ToolpassHooks(ScriptedEngine(), toolkit=kit, session=lambda ctx: "chat-1"):
        first, final = kickoff([("close_sprint", {"sprint": "S1"})], tools=[close])
        assert ran == []
        assert first[0].startswith("Refused by toolpass (approval_pending)")
        assert final == "done"
        [request] = queue.pending()
        assert request.id in first[0]
        queue.approve(request.id, by="lead@example.com")
        again, _ = kickoff([("close_sprint", {"sprint": "S1"})], tools=[close])
    assert again == ["closed S1"]
    assert ran == ["S1"]


@pytest.mark.parametrize(("answer", "runs"), [("approve", True), ("no", False)])
def test_ask_human_asks_the_crewai_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], answer: str, runs: bool
) -> None:
    monkeypatch.setattr("builtins.input", lambda *a: answer)  # the person at the console
    kit = Toolkit(approver=ask_human, audit=[])
    ran: list[str] = []
    with ToolpassHooks(ScriptedEngine(), toolkit=kit):
        out, _ = kickoff([("close_sprint", {"sprint": "S1"})], tools=[_approval_tool(kit, ran)])
    assert ran == (["S1"] if runs else [])
    if runs:
        assert out == ["closed S1"]
    else:
        assert "approval_denied" in out[0]
    assert "wants to run close_sprint" in capsys.readouterr().out  # CrewAI printed the prompt


def test_ask_human_outside_a_crewai_call_refuses() -> None:
    kit = Toolkit(approver=ask_human, audit=[])
    ran: list[str] = []

    @kit.secured_tool(approve=True)
    def close_sprint(sprint: str) -> str:
        ran.append(sprint)
        return "closed"

    with Session(DANA).active(), pytest.raises(ToolRefused) as refused:
        close_sprint("S1")
    assert ran == []
    assert refused.value.code == "check_error"


def test_kickoff_for_each_checks_each_run_for_its_own_user() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    recorder = Recorder()
    built, _ = crew([("whoami", {}), ("delete_issue", {"key": "PAY-1"})], recorder.tools())
    with ToolpassHooks(engine, {"delete_issue": DELETE}):
        built.kickoff_for_each(inputs=[{"user_id": DANA}, {"user_id": ERIN}])
    assert recorder.ran == [("whoami", DANA), ("delete_issue", "PAY-1"), ("whoami", ERIN)]


class ParallelLLM(ScriptedLLM):
    """Asks for all its calls in one response: CrewAI runs them in parallel threads."""

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        outputs = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
        with self._lock:
            self._read.append(outputs)
        if outputs:
            return "done"
        return [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(self.script)
        ]


def test_parallel_calls_in_one_response_each_read_their_own_result() -> None:
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    recorder = Recorder()
    script = [
        ("delete_issue", {"key": "PAY-1"}),
        ("delete_issue", {"key": "PAY-2"}),
        ("whoami", {}),
        ("explode", {"why": "disk full"}),
    ]
    llm = ParallelLLM(model="scripted", script=script)
    agent = Agent(
        role="Assistant", goal="Help", backstory="Scripted", llm=llm, tools=recorder.tools()
    )
    built = Crew(
        agents=[agent], tasks=[Task(description="Go.", expected_output="done", agent=agent)]
    )
    with ToolpassHooks(engine, {"delete_issue": DELETE}):
        built.kickoff(inputs={"user_id": DANA})
    out = llm.outputs
    assert out[0] == "deleted PAY-1"
    assert "not_authorized" in out[1]
    assert out[2] == f"acting for {DANA}"
    assert out[3] == "Error executing tool: disk full"
    assert sorted(recorder.ran) == [
        ("delete_issue", "PAY-1"),
        ("explode", "disk full"),
        ("whoami", DANA),
    ]


def test_a_tool_the_agent_lacks_is_refused_and_audited() -> None:
    events: list[AuditEvent] = []
    with ToolpassHooks(ScriptedEngine(), toolkit=Toolkit(audit=[events.append])):
        out, final = kickoff([("no_such_tool", {})])
    assert final == "done"
    assert out == [
        "Refused by toolpass (check_error): There is no such tool here, so nothing was run. "
        "Use one of your tools."
    ]
    assert [(e.tool, e.code) for e in events] == [("no_such_tool", "check_error")]


def test_an_agent_kicked_off_alone_takes_its_user_from_a_callable() -> None:
    """``Agent.kickoff`` has no crew inputs: without a ``user`` callable nobody is known."""
    recorder = Recorder()
    llm = ScriptedLLM(model="scripted", script=[("whoami", {})])
    alone = Agent(role="Assistant", goal="Help", backstory="b", llm=llm, tools=recorder.tools())
    with ToolpassHooks(ScriptedEngine()):
        alone.kickoff("Who am I?")
    assert recorder.ran == []
    assert "no_session" in llm.outputs[0]
    llm = ScriptedLLM(model="scripted", script=[("whoami", {})])
    alone = Agent(role="Assistant", goal="Help", backstory="b", llm=llm, tools=recorder.tools())
    with ToolpassHooks(ScriptedEngine(), user=lambda ctx: DANA):
        alone.kickoff("Who am I?")
    assert llm.outputs == [f"acting for {DANA}"]
