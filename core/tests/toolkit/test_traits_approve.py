"""``Traits(approve=True)``: a framework tool an adapter guards needs a person for every call,
as ``secured_tool(approve=True)`` does, so the adapter's check (an OpenAI Agents SDK
``needs_approval``, a Claude Agent SDK or CrewAI hook) sees it before the body runs."""

from __future__ import annotations

import pytest
from toolpass import ApprovalPending, ApprovalQueue, Toolkit
from toolpass.adapting import Answer, Guard, Traits
from toolpass.testing import ScriptedEngine

USER = "dana@example.com"


def guard(traits: Traits) -> Guard:
    kit = Toolkit(approver=ApprovalQueue(), audit=[])
    return Guard(ScriptedEngine({}), {"deploy": traits}, toolkit=kit, session=lambda _: "t1")


def test_every_call_of_an_approve_tool_waits_for_a_person_then_runs_once() -> None:
    g = guard(Traits(effect="write", approve=True))
    key = g.key(None, None, None)
    waiting = g.check(USER, "deploy", {"service": "api"}, key=key)
    assert isinstance(waiting, ApprovalPending)
    pending = g.pending(waiting)
    assert pending is not None
    assert pending.reasons == ("this tool always needs approval",)
    ran: list[str] = []
    done = g.resume(
        USER,
        "deploy",
        {"service": "api"},
        lambda given: lambda: ran.append(given["service"]) or "deployed",
        request_id=pending.request_id,
        answer=Answer("approve", by="lee"),
        key=key,
    )
    assert (done, ran) == ("deployed", ["api"])


def test_a_tool_without_it_runs_at_once() -> None:
    assert guard(Traits(effect="write")).check(USER, "deploy", {"service": "api"}) is None


def test_approve_is_true_or_false() -> None:
    with pytest.raises(TypeError):
        Traits(approve="yes")  # type: ignore[arg-type]
