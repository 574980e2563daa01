"""Attacks on observe mode's promise that what it audits is what enforcement would do: a
call enforcement would refuse never runs there, so in observe it holds no slot under a
limit either, and a later call is not reported as one enforcement would refuse."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from toolpass import Decision, Session, Toolkit, ToolRefused


def outcomes(calls: list[bool], mode: str) -> tuple[list[Any], list[str]]:
    """Each call's refusal code (None: ran) in ``mode``, and what ran."""
    events: list[Any] = []
    kit = Toolkit(mode=mode, audit=[events.append])  # type: ignore[arg-type]
    ran: list[str] = []

    def decide(call: Any) -> Decision:
        return Decision.allow("ok") if call.arguments["ok"] else Decision.deny("no access")

    @kit.tool(limit=2, authorize=decide)
    def act(ok: bool) -> str:
        ran.append(str(ok))
        return "done"

    codes: list[Any] = []
    with Session("dana@example.com").active():
        for ok in calls:
            try:
                act(ok)
                codes.append(None)
            except ToolRefused as refused:
                codes.append(refused.code)
    if mode == "observe":
        codes = [next((w["code"] for w in e.would_refuse), None) for e in events]
    return codes, ran


@given(st.lists(st.booleans(), max_size=6))
def test_observe_reports_what_enforce_refuses_under_a_limit(calls: list[bool]) -> None:
    """Denied calls mixed with allowed ones under limit=2: observe's would_refuse is, call by
    call, what enforce refuses (before, a denied call spent its slot in observe, so a later
    allowed call read limit_exceeded that enforcement would have run), and every call ran."""
    enforced, _ = outcomes(calls, "enforce")
    observed, ran = outcomes(calls, "observe")
    assert observed == enforced
    assert len(ran) == len(calls)


TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def test_an_observed_call_enforcement_would_refuse_gets_its_credential_never_the_audit() -> None:
    """Decided: observe runs the tool as it would run without toolpass, so a call that
    enforcement would refuse gets its credential too (documented under Limits); the audit
    event names what would be refused and never carries the credential."""
    events: list[Any] = []
    kit = Toolkit(mode="observe", credentials={"gh": lambda: TOKEN}, audit=[events.append])
    given: list[str] = []

    @kit.tool(scope={"repo": "acme/*"}, credential="gh")
    def merge(repo: str, *, credential: str) -> str:
        given.append(credential)
        return f"merged {repo} with {credential}"

    with Session("dana@example.com").active():
        assert TOKEN not in merge("other/x")  # the output is redacted of it
    assert given == [TOKEN]
    assert [w["code"] for w in events[-1].would_refuse] == ["out_of_scope"]
    assert TOKEN not in str(events[-1].to_dict())
