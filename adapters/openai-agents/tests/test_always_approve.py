"""The SDK's ``always_approve`` is no person's answer to a request they were never shown:
a later call of the same tool that toolpass sends for approval still waits for one."""

from __future__ import annotations

from agents import function_tool
from pytest_toolpass import Call, ScriptedEngine
from scripted import agent, read
from test_approvals import ASKS, DANA, Setup, _run
from toolpass import Decision


def test_always_approve_does_not_approve_a_later_request_nobody_saw() -> None:
    """The person approves the call to PAY-1 with ``always_approve=True``; the model then
    calls PAY-2 (refused: it waits for a person) and calls it again as the refusal says.
    Before, the retry found PAY-2's request waiting and recorded the SDK's standing approval
    as the answer to it ("openai-agents state.approve"): PAY-2 ran, unseen."""
    setup = Setup()
    allowed = {(DANA, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for n in (1, 2)}
    setup.guardrails = type(setup.guardrails)(
        ScriptedEngine(allowed),
        {"delete_issue": ASKS},
        toolkit=setup.guardrails.guard.toolkit,
        session=lambda _: "ticket-1",
    )

    def delete_issue(key: str) -> str:
        """Delete an issue."""
        setup.ran.append(key)
        return f"deleted {key}"

    script = [Call("delete_issue", {"key": k}) for k in ("PAY-1", "PAY-2", "PAY-2")]
    a = setup.guardrails.apply(agent(script, [function_tool(delete_issue)]))
    state = _run(a, "go").to_state()
    [item] = state.get_interruptions()
    assert setup.guardrails.pending(item) is not None  # what the person was shown: PAY-1
    state.approve(item, always_approve=True)
    _run(a, state)
    assert setup.ran == ["PAY-1"]
    said = read(a)
    assert "deleted PAY-1" in said[0]
    assert len(said) == 3
    assert all("approval_pending" in text for text in said[1:])
    [waiting] = setup.queue.pending()
    assert waiting.arguments == {"key": "PAY-2"}
