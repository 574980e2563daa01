"""``approvals="ask"`` and ``"defer"`` through the SDK's real loop (the bundled CLI, a
scripted model behind the fake Messages API): the host's ``can_use_tool`` is Claude Code's
prompt, its answer recorded in the queue and the check run again; a deferred run resumed
later. The conformance suite (``test_conformance.py``) drives ``"defer"`` through every
approval case."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
)
from claude_harness import fake, options, run
from pytest_toolpass import ScriptedEngine
from toolpass import ApprovalQueue, AuditEvent, Decision, Toolkit
from toolpass.adapting import Traits
from toolpass.claude_agent_sdk import Answer, Rule, ToolpassHooks

DANA = "dana@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
ENGINE = {
    (DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow(),
    (DANA, "DELETE_ISSUES", "issue:PAY-2"): Decision.allow(),
    (DANA, "DELETE_ISSUES", "issue:PAY-9"): Decision.deny("not dana's"),
}
#: Sends out what it read (private and untrusted): every call asks a person.
ASKS = Traits(
    effect="destructive", sends_out=True, reads_private=True, untrusted_output=True, rule=DELETE
)
CALL = ("mcp__ops__delete_issue", {"key": "PAY-1"})
#: The SDK warns that ``allowed_tools`` shadows ``can_use_tool``: a hook's "ask" does not
#: (Claude Code asks the callback for it all the same, as these tests show).
pytestmark = pytest.mark.filterwarnings("ignore:can_use_tool will not be invoked")


class Host:
    """The application's permission prompt: records what Claude Code asked, answers."""

    def __init__(self, said: PermissionResultAllow | PermissionResultDeny) -> None:
        self.said = said
        self.asked: list[tuple[str, dict[str, Any], str | None]] = []

    async def __call__(
        self, name: str, input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        self.asked.append((name, input, context.decision_reason))
        return self.said


def setup(approvals: str, **more: Any) -> tuple[Any, list[str], ApprovalQueue, list[AuditEvent]]:
    queue, events, ran = ApprovalQueue(), [], []
    kit = Toolkit(approver=queue, audit=[events.append])

    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return f"deleted {key}"

    hooks = ToolpassHooks(
        ScriptedEngine(ENGINE),
        {"mcp__ops__delete_issue": ASKS},
        user=DANA,
        toolkit=kit,
        approvals=approvals,  # type: ignore[arg-type]
    )
    opts = hooks.apply(options("ops", [delete_issue], **more))
    return (hooks, opts), ran, queue, events


def go(opts: Any, calls: list[Any]) -> Any:
    return asyncio.run(run(opts, calls))


@pytest.mark.parametrize(
    ("said", "expected", "runs"),
    [
        (PermissionResultAllow(), "deleted PAY-1", ["PAY-1"]),
        (PermissionResultAllow(updated_input={"key": "PAY-2"}), "deleted PAY-2", ["PAY-2"]),
        (PermissionResultAllow(updated_input={"key": "PAY-9"}), "not_authorized", []),
        (PermissionResultDeny(message="wrong project"), "wrong project", []),
    ],
)
def test_ask_puts_the_request_to_the_hosts_prompt_and_checks_its_answer_again(
    said: Any, expected: str, runs: list[str]
) -> None:
    host = Host(said)
    (_, opts), ran, queue, _ = setup("ask", can_use_tool=host)
    out = go(opts, [CALL])
    [(name, asked_input, reason)] = host.asked
    assert (name, asked_input) == CALL
    assert reason is not None
    assert "wants to run mcp__ops__delete_issue" in reason  # the request's description
    assert "key = 'PAY-1'" in reason
    assert expected in out.outputs[0]
    assert ran == runs
    if isinstance(said, PermissionResultDeny):
        assert "approval_denied" in out.outputs[0]
    assert queue.pending() == []  # decided, in the queue, by the host's prompt
    assert {r.decided_by for r in queue.history()} == {"can_use_tool"}


def test_ask_needs_the_hosts_prompt() -> None:
    hooks = ToolpassHooks(ScriptedEngine(), user=DANA, approvals="ask")
    with pytest.raises(ValueError, match="can_use_tool"):
        hooks.apply(options())
    with pytest.raises(ValueError, match="bypassPermissions"):
        hooks.apply(
            options(can_use_tool=Host(PermissionResultAllow()), permission_mode="bypassPermissions")
        )
    with pytest.raises(ValueError, match="approvals"):
        ToolpassHooks(ScriptedEngine(), user=DANA, approvals="wait")  # type: ignore[arg-type]


def test_a_prompt_that_fails_refuses_and_records_nothing() -> None:
    async def broken(*_: Any) -> Any:
        raise RuntimeError("the UI is gone")

    (_, opts), ran, queue, _ = setup("ask", can_use_tool=broken)
    out = go(opts, [CALL])
    assert ran == []
    assert "check_error" in out.outputs[0]
    assert "UI is gone" not in out.outputs[0]
    assert [r.id for r in queue.pending()]  # still waiting for a person


def test_defer_stops_the_run_and_resuming_after_the_page_approved_runs_once() -> None:
    (hooks, opts), ran, queue, events = setup("defer")
    out = go(opts, [CALL])
    [result] = [m for m in out.messages if isinstance(m, ResultMessage)]
    assert result.deferred_tool_use is not None
    pending = hooks.deferred(result)
    [request] = queue.pending()
    assert pending is not None
    assert pending.request_id == request.id
    assert ran == []
    queue.approve(request.id, by="lee")  # on the approvals page: no answer() needed
    go(dataclasses.replace(opts, resume=out.session_id), [])
    assert ran == ["PAY-1"]
    assert [(e.outcome, e.code) for e in events if e.tool == CALL[0]][-1] == ("ok", None)


def test_defer_resumed_with_an_answer_for_another_call_runs_nothing() -> None:
    (hooks, opts), ran, queue, _ = setup("defer")
    out = go(opts, [CALL])
    [result] = [m for m in out.messages if isinstance(m, ResultMessage)]
    assert result.deferred_tool_use is not None
    [request] = queue.pending()
    hooks.answer("toolu_someone_else", request.id, Answer("approve", by="lee"))
    go(dataclasses.replace(opts, resume=out.session_id), [])
    assert ran == []
    assert queue.state(request.id) == "pending"


def test_a_built_in_tool_asks_through_the_hook_and_runs_with_the_approved_input() -> None:
    home = Path(fake().home.name)
    (home / "notes.txt").write_text("meeting at noon")
    queue = ApprovalQueue()
    host = Host(PermissionResultAllow())
    hooks = ToolpassHooks(
        ScriptedEngine(),
        {"Read": Traits(effect="read", sends_out=True, reads_private=True, untrusted_output=True)},
        user=DANA,
        toolkit=Toolkit(approver=queue, audit=[]),
        approvals="ask",
    )
    opts = hooks.apply(options(tools=["Read"], can_use_tool=host))
    out = go(opts, [("Read", {"file_path": str(home / "notes.txt")})])
    assert len(host.asked) == 1
    assert "meeting at noon" in out.outputs[0]
