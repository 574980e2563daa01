"""``approval_timeout``: CrewAI has no tool-level pause, so a call waiting for a person blocks
its hook on the queue, through a real ``Crew.kickoff`` with a scripted model, while a person
decides from another thread (as the approvals page does in another process)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from pytest_toolpass import ScriptedEngine
from test_hooks import DELETE, MAY_DELETE, Recorder, kickoff
from toolpass import ApprovalQueue, AuditEvent, Toolkit
from toolpass.adapting import Traits
from toolpass.crewai import ToolpassHooks

#: Sends out what it read (private and untrusted): every call asks a person.
ASKS = Traits(
    effect="destructive", sends_out=True, reads_private=True, untrusted_output=True, rule=DELETE
)
CALL = ("delete_issue", {"key": "PAY-1"})


def person(queue: ApprovalQueue, decide: Callable[[ApprovalQueue, str], Any]) -> threading.Thread:
    """Someone who, once a request waits, decides on it."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            waiting = queue.pending()
            if waiting:
                decide(queue, waiting[0].id)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def guarded(queue: ApprovalQueue, events: list[AuditEvent], **more: Any) -> ToolpassHooks:
    kit = Toolkit(approver=queue, audit=[events.append])
    return ToolpassHooks(ScriptedEngine(MAY_DELETE), {"delete_issue": ASKS}, toolkit=kit, **more)


def test_an_approval_given_while_the_hook_waits_runs_the_call_once() -> None:
    queue, events, recorder = ApprovalQueue(), [], Recorder()
    lee = person(queue, lambda q, rid: q.approve(rid, by="lee@example.com"))
    with guarded(queue, events, approval_timeout=20):
        out, final = kickoff([CALL], recorder=recorder)
    lee.join(5)
    assert out == ["deleted PAY-1"]
    assert final == "done"
    assert recorder.ran == [("delete_issue", "PAY-1")]
    [event] = events  # one call, one event: the wait is part of its check
    assert (event.outcome, event.approved_by) == ("ok", "lee@example.com")
    assert event.approval_id is not None
    assert queue.pending() == []


def test_a_denial_while_the_hook_waits_reaches_the_model_with_the_reason() -> None:
    queue, events, recorder = ApprovalQueue(), [], Recorder()
    lee = person(queue, lambda q, rid: q.deny(rid, by="lee", reason="wrong project"))
    with guarded(queue, events, approval_timeout=20):
        out, _ = kickoff([CALL], recorder=recorder)
    lee.join(5)
    assert recorder.ran == []
    assert "approval_denied" in out[0]
    assert "wrong project" in out[0]


def test_nobody_deciding_in_time_reads_pending_and_the_retry_runs_once_approved() -> None:
    queue, events, recorder = ApprovalQueue(), [], Recorder()
    hooks = guarded(queue, events, approval_timeout=0.3, session=lambda _: "chat-1")
    with hooks:
        started = time.monotonic()
        out, _ = kickoff([CALL], recorder=recorder)
        assert 0.3 <= time.monotonic() - started < 15
        assert "approval_pending" in out[0]
        [request] = queue.pending()
        assert request.id in out[0]
        queue.approve(request.id, by="lee")
        again, _ = kickoff([CALL], recorder=recorder)
    assert again == ["deleted PAY-1"]
    assert recorder.ran == [("delete_issue", "PAY-1")]


def test_a_request_expiring_while_the_hook_waits_reads_expired_not_denied() -> None:
    now = [1000.0]
    queue, events, recorder = ApprovalQueue(clock=lambda: now[0], ttl=60), [], Recorder()

    def time_passes(q: ApprovalQueue, rid: str) -> None:
        now[0] += 120
        q.expire(rid)

    clock = person(queue, time_passes)
    with guarded(queue, events, approval_timeout=20):
        out, _ = kickoff([CALL], recorder=recorder)
    clock.join(5)
    assert recorder.ran == []
    assert "approval_expired" in out[0]
    assert "approval_denied" not in out[0]


def test_without_approval_timeout_the_refusal_comes_at_once() -> None:
    """A person approves as soon as the request waits: a hook that waited for the answer
    would run the call; one that refuses at once does not."""
    queue, events, recorder = ApprovalQueue(), [], Recorder()
    lee = person(queue, lambda q, rid: q.approve(rid, by="lee@example.com"))
    with guarded(queue, events):
        out, _ = kickoff([CALL], recorder=recorder)
    lee.join(5)
    assert "approval_pending" in out[0]
    assert recorder.ran == []


@pytest.mark.parametrize(
    "bad", [0, -1, 0.0, -0.5, float("nan"), float("inf"), True, False, "5", [5]]
)
def test_approval_timeout_is_a_positive_number_of_seconds(bad: Any) -> None:
    with pytest.raises(TypeError):
        ToolpassHooks(ScriptedEngine(), approval_timeout=bad)
